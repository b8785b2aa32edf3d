// Package sample is the fixture of apisurface's tests.
//
// # Public surface
//
//	Alias: Field Method
//	Answer Other
//	Thing: Name Close
//		Reader
//	Watcher: Watch
//
// # Other
//
//	NotAnEntry
package sample
