package cqlsim

import (
	"errors"
	"fmt"

	"github.com/datastax/go-cassandra-native-protocol/message"
)

// requestError is a failure that is answered with a native-protocol ERROR of a specific code.
type requestError struct{ msg message.Error }

func (e *requestError) Error() string { return e.msg.GetErrorMessage() }

func syntaxErrorf(format string, args ...any) error {
	return &requestError{&message.SyntaxError{ErrorMessage: fmt.Sprintf(format, args...)}}
}

func invalidf(format string, args ...any) error {
	return &requestError{&message.Invalid{ErrorMessage: fmt.Sprintf(format, args...)}}
}

func protocolErrorf(format string, args ...any) error {
	return &requestError{&message.ProtocolError{ErrorMessage: fmt.Sprintf(format, args...)}}
}

// errorMessage converts any error into the ERROR message answering the request; errors without a
// native-protocol code become SERVER_ERROR.
func errorMessage(err error) message.Error {
	var re *requestError
	if errors.As(err, &re) {
		return re.msg
	}
	return &message.ServerError{ErrorMessage: err.Error()}
}

func configError(msg string) message.Error { return &message.ConfigError{ErrorMessage: msg} }
