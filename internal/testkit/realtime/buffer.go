package realtime

import (
	"bytes"
	"sync"
)

// Buffer is an io.Writer that a command writes to on its goroutine while the test reads what
// was written with String. The zero value is ready to use.
type Buffer struct {
	mu sync.Mutex // guards b
	b  bytes.Buffer
}

// Write appends p.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

// String returns everything written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
