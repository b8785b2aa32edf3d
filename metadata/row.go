package metadata

import (
	"fmt"
	"net"
)

// Row maps a column name to its decoded value. A NULL decodes to the Go zero value of the
// column's type (nil net.IP, "" for text and uuid, nil []string, 0), the way gocql's SliceMap
// reports it, so the type of a NULL column can still be checked. Values, by CQL type:
//
//	text, varchar, ascii     string
//	uuid, timeuuid           string, canonical lower-case form ("" for NULL)
//	inet                     net.IP (4 bytes for IPv4), never aliasing the frame buffer
//	int                      int
//	bigint, counter          int64
//	boolean                  bool
//	timestamp                time.Time
//	blob                     []byte
//	set<text>, list<text>    []string
//	anything else            datacodec's preferred Go type (nil for NULL)
type Row map[string]any

// columnError says which column was missing or mistyped. It wraps ErrMissingColumn or
// ErrColumnType.
type columnError struct {
	Column string
	Want   string // the Go type the caller expected
	Got    string // the Go type found, "" when the column is missing
	Err    error  // ErrMissingColumn or ErrColumnType
}

func (e *columnError) Error() string {
	if e.Got == "" {
		return fmt.Sprintf("metadata: column %q: %v", e.Column, e.Err)
	}
	return fmt.Sprintf("metadata: column %q: %v: want %s, got %s", e.Column, e.Err, e.Want, e.Got)
}

func (e *columnError) Unwrap() error { return e.Err }

// Has reports whether the result had the column.
func (r Row) Has(col string) bool {
	_, ok := r[col]
	return ok
}

// Text returns a text, varchar or ascii column ("" for NULL).
func (r Row) Text(col string) (string, error) { return column[string](r, col, "string") }

// UUID returns a uuid or timeuuid column in canonical form ("" for NULL).
func (r Row) UUID(col string) (string, error) { return column[string](r, col, "string (uuid)") }

// IP returns an inet column (nil for NULL). The slice is the row's own: callers that keep it
// and let others modify the row should copy it.
func (r Row) IP(col string) (net.IP, error) { return column[net.IP](r, col, "net.IP") }

// Int returns an int column (0 for NULL).
func (r Row) Int(col string) (int, error) { return column[int](r, col, "int") }

// Strings returns a set<text> or list<text> column (nil for NULL or empty).
func (r Row) Strings(col string) ([]string, error) { return column[[]string](r, col, "[]string") }

func column[T any](r Row, col, want string) (T, error) {
	var zero T
	v, ok := r[col]
	if !ok {
		return zero, &columnError{Column: col, Want: want, Err: ErrMissingColumn}
	}
	t, ok := v.(T)
	if !ok {
		return zero, &columnError{Column: col, Want: want, Got: fmt.Sprintf("%T", v), Err: ErrColumnType}
	}
	return t, nil
}
