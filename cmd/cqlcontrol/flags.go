package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
)

// newFlagSet is the flag set of "cqlcontrol name". It reports to stderr, and its usage reads
// "usage: cqlcontrol name synopsis", a blank line, description, a blank line and the flags.
func newFlagSet(name, synopsis, description string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("cqlcontrol "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: %s %s\n\n%s\n\n", fs.Name(), synopsis, description)
		fs.PrintDefaults()
	}
	return fs
}

// parseFlags parses args with fs: flag.ErrHelp when help was asked for, errUsage for a
// mistake (the flag package has said what is wrong, and shown the usage).
func parseFlags(fs *flag.FlagSet, args []string) error {
	err := fs.Parse(args)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, flag.ErrHelp):
		return err
	default:
		return errUsage
	}
}

// flagError reports a mistake in the command line on one line, "cqlcontrol name: message", and
// returns errUsage.
func flagError(fs *flag.FlagSet, format string, a ...any) error {
	fmt.Fprintf(fs.Output(), "%s: %s\n", fs.Name(), fmt.Sprintf(format, a...))
	return errUsage
}

// usageError is flagError followed by the usage.
func usageError(fs *flag.FlagSet, format string, a ...any) error {
	err := flagError(fs, format, a...)
	fs.Usage()
	return err
}
