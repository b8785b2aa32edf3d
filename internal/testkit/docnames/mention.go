package docnames

import (
	"regexp"
	"strings"
	"unicode"
)

// Mention is a name a text mentions.
type Mention struct {
	Line int    // 1-based, in the text given to Markdown or PackageDoc
	Text string // as written: the backquoted span, or the token in prose or a command
	// Parts is the dotted name without pointer, call parentheses or composite literal:
	// `*controlconn.ControlConnection` is [controlconn ControlConnection], `cc.Status()` is
	// [cc Status].
	Parts []string
	kind  kind
}

type kind int

const (
	// span: a backquoted span that is one dotted name; it must resolve.
	span kind = iota
	// qualified: a dotted token inside prose or a longer span (a command, an expression); it is
	// checked only when its first part is a package or a type of the index.
	qualified
	// testName: a test function's name (Test, Benchmark, Fuzz or Example and a capital); it
	// must be a declared function.
	testName
	// testPrefix: a test name in a command (go test -run X): some function must start with it,
	// as -run matches.
	testPrefix
	// word: a mixed-case word of prose that starts lower-case (newWithConfig, setupConn); some
	// source must have an identifier of that name, a local variable or parameter included.
	word
)

var (
	// spanRE is a backquoted span that is one Go name: an optional *, an optional import path,
	// dotted identifiers each optionally called with no arguments, an optional composite
	// literal: `*realcluster.Sim`, `cc.Status()`, `controlconn.Governor{Off: true}`,
	// `net/http/httptrace.ClientTrace`.
	spanRE = regexp.MustCompile(
		`^\*?(?:[\w.-]+/)*([A-Za-z_]\w*(?:\(\))?(?:\.[A-Za-z_]\w*(?:\(\))?)*)(?:\{[^{}]*\})?$`)
	// dottedRE is a dotted name inside longer text, not part of a path, a file name or a
	// flag (the character before it is none of \w . / - $ ~).
	dottedRE = regexp.MustCompile(`(?:^|[^\w./$~-])([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+)`)
	// testRE is a test, benchmark, fuzz target or example function's name.
	testRE = regexp.MustCompile(`(?:^|[^\w./-])((?:Test|Benchmark|Fuzz|Example)[A-Z0-9_]\w*)(\$?)`)
	// codeRE is an inline code span of Markdown or a doc comment.
	codeRE = regexp.MustCompile("`([^`]+)`")
	// wordRE is a mixed-case word that starts lower-case: newWithConfig, not gRPC, vN or nPK.
	wordRE = regexp.MustCompile(`(?:^|[^\w./-])([a-z]+[A-Z][a-z0-9]\w*)\b`)
	// funcRE is a function declaration's name in a fenced block.
	funcRE = regexp.MustCompile(`func \w+`)
)

// extensions are the file name endings a dotted span can have (`controlconn.go`, `results.json`):
// such a span names a file, not a Go identifier.
var extensions = map[string]bool{
	"go": true, "md": true, "mod": true, "sum": true, "json": true, "yml": true, "yaml": true,
	"txt": true, "png": true, "svg": true, "lock": true, "xml": true, "tar": true, "sh": true,
	"options": true, "conf": true, "py": true, "js": true, "rs": true, "java": true, "toml": true,
}

// notNames are mixed-case words that docs backquote and that are not Go names: files of the
// repository's root.
var notNames = map[string]bool{"Makefile": true, "Dockerfile": true}

// Markdown returns the names that the Markdown text src mentions: every backquoted span that is
// one Go name (spanName says which are), and in the rest of the text, fenced code included, the
// dotted names and test names (TestFullRestarts) that a reader takes for Go names, and in prose
// the mixed-case words that start lower-case. A function that a fenced block declares (an
// example for the reader: func and the name) is not a mention.
func Markdown(src string) []Mention {
	lines := strings.Split(src, "\n")
	var out []Mention
	fenced := false
	for i, line := range lines {
		if t := strings.TrimSpace(line); strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~") {
			fenced = !fenced
			lines[i] = ""
			continue
		}
		if fenced {
			out = append(out, inText(i+1, funcRE.ReplaceAllString(line, " "), true)...)
			lines[i] = ""
		}
	}
	return append(out, inProse(strings.Join(lines, "\n"))...)
}

// PackageDoc returns the names that a package doc comment's text mentions, as Markdown does for
// a page (a doc comment has no fences: its indented blocks are read as prose).
func PackageDoc(text string) []Mention {
	return inProse(text)
}

// inProse returns the names that prose with inline code spans mentions. A span may continue on
// the next line, not past a blank one.
func inProse(text string) []Mention {
	var out []Mention
	line := func(off int) int { return 1 + strings.Count(text[:off], "\n") }
	for _, m := range codeRE.FindAllStringSubmatchIndex(text, -1) {
		s := text[m[2]:m[3]]
		if strings.Contains(s, "\n\n") {
			continue
		}
		out = append(out, inSpan(line(m[0]), strings.ReplaceAll(s, "\n", " "))...)
	}
	rest := codeRE.ReplaceAllStringFunc(text, func(s string) string {
		return strings.Map(func(r rune) rune {
			if r == '\n' {
				return r
			}
			return ' '
		}, s)
	})
	for i, l := range strings.Split(rest, "\n") {
		out = append(out, inText(i+1, l, false)...)
	}
	return out
}

// inSpan returns the names that the backquoted span s mentions: s itself if it is one Go name,
// else the dotted names and test names in it (a command, an expression, a query).
func inSpan(n int, s string) []Mention {
	s = strings.TrimSpace(s)
	if parts, ok := spanName(s); ok {
		return []Mention{{Line: n, Text: s, Parts: parts, kind: span}}
	}
	if spanRE.MatchString(s) {
		return nil // a word, a metric or label name, a constant of another language, a file
	}
	var out []Mention
	for _, m := range testRE.FindAllStringSubmatch(s, -1) {
		k := testPrefix
		if m[2] == "$" {
			k = testName
		}
		out = append(out, Mention{Line: n, Text: m[1], Parts: []string{m[1]}, kind: k})
	}
	for _, m := range dottedRE.FindAllStringSubmatch(s, -1) {
		out = append(out, Mention{Line: n, Text: m[1], Parts: strings.Split(m[1], "."), kind: qualified})
	}
	return out
}

// inText returns the names that prose (or a fenced block) mentions: test names, dotted names
// whose last part is exported (`controlconn.New`, not `governor.md`), and outside code the
// mixed-case words that start lower-case.
func inText(n int, text string, code bool) []Mention {
	var out []Mention
	for _, m := range testRE.FindAllStringSubmatch(text, -1) {
		k := testName
		if code || strings.Contains(text, "-run ") || strings.Contains(text, "-bench ") {
			k = testPrefix // a command's -run pattern
		}
		out = append(out, Mention{Line: n, Text: m[1], Parts: []string{m[1]}, kind: k})
	}
	if !code {
		for _, m := range wordRE.FindAllStringSubmatch(text, -1) {
			out = append(out, Mention{Line: n, Text: m[1], Parts: []string{m[1]}, kind: word})
		}
	}
	for _, m := range dottedRE.FindAllStringSubmatch(text, -1) {
		parts := strings.Split(m[1], ".")
		if last := parts[len(parts)-1]; !unicode.IsUpper(rune(last[0])) {
			continue
		}
		out = append(out, Mention{Line: n, Text: m[1], Parts: parts, kind: qualified})
	}
	return out
}

// spanName reports whether the backquoted span s is one Go name that must resolve, and its parts.
// It is not when it is a file name (`results.json`), has a snake_case part after the first
// (`setups.by_error`), or is a lower-case word or snake_case name
// (`scheduled`, `host_up`: states, commands, metric names, labels), or an upper-case constant
// (`TOPOLOGY_CHANGE`, `PATH`). A single name must mix cases: `Close`, `DelayCap`, `setupConn`.
func spanName(s string) ([]string, bool) {
	m := spanRE.FindStringSubmatch(s)
	if m == nil {
		return nil, false
	}
	parts := strings.Split(strings.ReplaceAll(m[1], "()", ""), ".")
	if len(parts) > 1 && extensions[parts[len(parts)-1]] {
		return nil, false
	}
	for _, p := range parts[1:] {
		if strings.Contains(p, "_") && !hasUpper(p) {
			return nil, false // a JSON or CQL path: `setups.by_error`, `system.peers_v2`
		}
	}
	if len(parts) == 1 {
		p := parts[0]
		if notNames[p] || !hasUpper(p) || !hasLower(p) {
			return nil, false
		}
	}
	return parts, true
}

func hasUpper(s string) bool { return strings.IndexFunc(s, unicode.IsUpper) >= 0 }
func hasLower(s string) bool { return strings.IndexFunc(s, unicode.IsLower) >= 0 }

// Resolves reports whether m names a declaration of the index: a dotted name resolves through
// its package (`controlconn.New`), its type (`Governor.Off`: a method, field or interface method
// of a type of that name, or of a type it embeds or aliases), a struct field's type
// (`Metadata.HostListener`: ClusterConfig's field Metadata is a MetadataConfig) or, for a
// variable (`cc.Status()`), any type that has the members; deeper parts (the last of
// `realcluster.Config.TLS.RequireClientAuth`) need only be some type's member. A dotted name
// whose first part is lower-case and neither a package nor a type is a variable's only when its
// second part is exported-looking; else (`system.peers`, `org.apache.cassandra`) it is not
// checked.
func (ix *Index) Resolves(m Mention) bool {
	p := m.Parts
	switch m.kind {
	case testName:
		return ix.top[p[0]]
	case word:
		return ix.idents[p[0]]
	case testPrefix:
		for _, f := range ix.funcs {
			if strings.HasPrefix(f, p[0]) {
				return true
			}
		}
		return false
	case qualified:
		if ix.pkgs[p[0]] == nil && (!ix.isType(p[0]) || !hasUpper(p[0][:1])) {
			return true // not a claim about a name of ours
		}
	}
	if len(p) == 1 {
		return ix.top[p[0]] || ix.member[p[0]]
	}
	first, rest := p[0], p[1:]
	switch {
	case ix.pkgs[first] != nil:
		if ix.pkgs[first][rest[0]] {
			return ix.typed(rest[0], rest[1:])
		}
		// A receiver named after its package and type (plan *Plan in package plan):
		// plan.Endpoints is the field.
		t := strings.ToUpper(first[:1]) + first[1:]
		return ix.pkgs[first][t] && ix.typed(t, rest)
	case ix.isType(first):
		return ix.typed(first, rest)
	case !hasUpper(first[:1]):
		if !hasUpper(rest[0][:1]) {
			return true
		}
		return ix.loose(rest)
	case len(ix.fieldTypes[first]) > 0:
		for _, t := range ix.fieldTypes[first] {
			if ix.typed(t, rest) {
				return true
			}
		}
		return false
	case ix.top[first]:
		return ix.loose(rest) // a function's result: `Status().LastErrClass`
	}
	return false // an exported-looking name that nothing declares
}

// typed reports whether rest are members of the type typ, the first one strictly.
func (ix *Index) typed(typ string, rest []string) bool {
	if len(rest) == 0 {
		return true
	}
	if !ix.isType(typ) {
		return ix.loose(rest)
	}
	return ix.hasMember(typ, rest[0], map[string]bool{}) && ix.loose(rest[1:])
}

// loose reports whether each of names is a member of some type (or a top-level name).
func (ix *Index) loose(names []string) bool {
	for _, n := range names {
		if !ix.member[n] && !ix.top[n] {
			return false
		}
	}
	return true
}
