package sample

import "io"

const Answer = 42

const hidden = 1

type Thing[T any] struct {
	Name  string
	inner T
	io.Reader
}

func (t *Thing[T]) Close() error { return nil }

func (t *Thing[T]) reset() {}

type Watcher interface{ Watch() }

type unexported struct{ Field int }

func (unexported) Method() {}

const Other = 1
