package sample

import (
	"io"

	"github.com/cqlcontrol/cqlcontrol/internal/testkit/apisurface/testdata/sample/inner"
)

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

// Alias is public with the exported members of inner.Inner.
type Alias = inner.Inner

type hiddenAlias = inner.Inner
