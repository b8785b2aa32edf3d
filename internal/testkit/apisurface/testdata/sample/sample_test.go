package sample

const TestOnly = 1
