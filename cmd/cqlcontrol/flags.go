package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"regexp"
	"strings"
)

// newFlagSet is the flag set of "cqlcontrol name". Mistakes are reported to stderr in one line
// (see flagError); the help ("--help", "-h", "cqlcontrol help name") goes to stdout and reads
// "usage: cqlcontrol name synopsis", a blank line, description, a blank line and the flags,
// each spelled --flag as the README does.
func newFlagSet(name, synopsis, description string, stdout, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("cqlcontrol "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stdout, "usage: %s %s\n\n%s\n\nflags:\n", fs.Name(), synopsis, description)
		printFlags(stdout, fs)
	}
	return fs
}

// printFlags lists fs's flags as flag.PrintDefaults does, but with two dashes (one for a
// one-letter flag). The flag package accepts either spelling of each.
func printFlags(w io.Writer, fs *flag.FlagSet) {
	fs.VisitAll(func(f *flag.Flag) {
		arg, usage := flag.UnquoteUsage(f)
		line := "  --" + f.Name
		if len(f.Name) == 1 {
			line = "  -" + f.Name // -v, by convention
		}
		if arg != "" {
			line += " " + arg
		}
		usage = strings.ReplaceAll(usage, "\n", "\n    \t")
		line += "\n    \t" + usage
		if !zeroDefault(f) {
			if g, ok := f.Value.(flag.Getter); ok && isString(g.Get()) {
				line += fmt.Sprintf(" (default %q)", f.DefValue)
			} else {
				line += fmt.Sprintf(" (default %s)", f.DefValue)
			}
		}
		fmt.Fprintln(w, line)
	})
}

func isString(v any) bool { _, ok := v.(string); return ok }

// zeroDefault reports whether a flag's default is its type's zero value, which the help omits
// unless the usage text explains it.
func zeroDefault(f *flag.Flag) bool {
	switch f.DefValue {
	case "", "0", "false", "0s":
		return true
	}
	return false
}

// parseFlags parses args with fs: flag.ErrHelp when help was asked for (the help is printed),
// errUsage for a mistake (said in one line on stderr, with where to find the help).
func parseFlags(fs *flag.FlagSet, args []string) error {
	usage, out := fs.Usage, fs.Output()
	fs.Usage = func() {}
	fs.SetOutput(io.Discard)
	err := fs.Parse(args)
	fs.Usage = usage
	fs.SetOutput(out)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, flag.ErrHelp):
		usage()
		return err
	default:
		// The flag package names flags with one dash; the README and the help use two.
		msg := flagNameRe.ReplaceAllString(err.Error(), "$1--$2")
		return flagError(fs, "%s", msg)
	}
}

// flagNameRe finds where the flag package names a flag ("...defined: -x", "for -x", "for flag
// -x"), not a dash inside a quoted value.
var flagNameRe = regexp.MustCompile(`(: |for |for flag )-([A-Za-z])`)

// flagError reports a mistake in the command line on one line, "cqlcontrol name: message (see
// cqlcontrol name --help)", and returns errUsage.
func flagError(fs *flag.FlagSet, format string, a ...any) error {
	fmt.Fprintf(fs.Output(), "%s: %s (see '%s --help')\n", fs.Name(), fmt.Sprintf(format, a...), fs.Name())
	return errUsage
}
