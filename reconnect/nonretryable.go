package reconnect

import "errors"

// NonRetryable marks err as permanent for the attempt function (authentication rejected, protocol
// or TLS failure): retrying soon cannot help, so the next attempt waits at least DelayCap and
// re-arms cannot bring it sooner. The message is unchanged; errors.Is/As still see err.
// NonRetryable(nil) is nil.
func NonRetryable(err error) error {
	if err == nil || IsNonRetryable(err) {
		return err
	}
	return &nonRetryableError{err: err}
}

// IsNonRetryable reports whether err, or any error it wraps, was marked by NonRetryable.
func IsNonRetryable(err error) bool {
	// errors.Is with a sentinel rather than errors.As: As needs an escaping target and would
	// allocate on every failed attempt.
	return err != nil && errors.Is(err, errNonRetryable)
}

var errNonRetryable = errors.New("reconnect: non-retryable")

type nonRetryableError struct{ err error }

func (e *nonRetryableError) Error() string        { return e.err.Error() }
func (e *nonRetryableError) Unwrap() error        { return e.err }
func (e *nonRetryableError) Is(target error) bool { return target == errNonRetryable }
