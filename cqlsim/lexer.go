package cqlsim

import (
	"regexp"
	"strings"
)

// tokKind classifies a CQL token.
type tokKind int

const (
	tokEOF    tokKind = iota
	tokIdent          // unquoted identifier or keyword, lower-cased in text
	tokQIdent         // "quoted identifier", case kept
	tokString         // 'string literal', unescaped
	tokInt
	tokFloat
	tokUUID
	tokBlob
	tokPunct // ( ) , ; . * = < > <= >= != ? : [ ] { } + -
)

type token struct {
	kind tokKind
	text string
	pos  int
	raw  string // as written, for error messages
}

var (
	uuidRe   = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}`)
	blobRe   = regexp.MustCompile(`^0[xX][0-9a-fA-F]*`)
	numberRe = regexp.MustCompile(`^[0-9]+(\.[0-9]*)?([eE][+-]?[0-9]+)?`)
	identRe  = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*`)
)

// lex splits a CQL statement into tokens. Comments (--, //, /* */) are skipped.
func lex(s string) ([]token, error) {
	var toks []token
	i := 0
	for i < len(s) {
		c := s[i]
		rest := s[i:]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case strings.HasPrefix(rest, "--") || strings.HasPrefix(rest, "//"):
			if nl := strings.IndexByte(rest, '\n'); nl >= 0 {
				i += nl + 1
			} else {
				i = len(s)
			}
		case strings.HasPrefix(rest, "/*"):
			end := strings.Index(rest[2:], "*/")
			if end < 0 {
				return nil, syntaxErrorf("line 1:%d unterminated comment", i)
			}
			i += end + 4
		case c == '\'':
			var b strings.Builder
			j := i + 1
			for {
				if j >= len(s) {
					return nil, syntaxErrorf("line 1:%d unterminated string literal", i)
				}
				if s[j] == '\'' {
					if j+1 < len(s) && s[j+1] == '\'' {
						b.WriteByte('\'')
						j += 2
						continue
					}
					break
				}
				b.WriteByte(s[j])
				j++
			}
			toks = append(toks, token{kind: tokString, text: b.String(), pos: i})
			i = j + 1
		case c == '"':
			var b strings.Builder
			j := i + 1
			for {
				if j >= len(s) {
					return nil, syntaxErrorf("line 1:%d unterminated quoted identifier", i)
				}
				if s[j] == '"' {
					if j+1 < len(s) && s[j+1] == '"' {
						b.WriteByte('"')
						j += 2
						continue
					}
					break
				}
				b.WriteByte(s[j])
				j++
			}
			toks = append(toks, token{kind: tokQIdent, text: b.String(), pos: i})
			i = j + 1
		case uuidRe.MatchString(rest):
			m := uuidRe.FindString(rest)
			toks = append(toks, token{kind: tokUUID, text: strings.ToLower(m), pos: i})
			i += len(m)
		case blobRe.MatchString(rest):
			m := blobRe.FindString(rest)
			toks = append(toks, token{kind: tokBlob, text: m, pos: i})
			i += len(m)
		case c >= '0' && c <= '9':
			m := numberRe.FindString(rest)
			kind := tokInt
			if strings.ContainsAny(m, ".eE") {
				kind = tokFloat
			}
			toks = append(toks, token{kind: kind, text: m, pos: i})
			i += len(m)
		case identRe.MatchString(rest):
			m := identRe.FindString(rest)
			toks = append(toks, token{kind: tokIdent, text: strings.ToLower(m), pos: i})
			i += len(m)
		case strings.HasPrefix(rest, "<=") || strings.HasPrefix(rest, ">=") || strings.HasPrefix(rest, "!="):
			toks = append(toks, token{kind: tokPunct, text: rest[:2], pos: i})
			i += 2
		case strings.ContainsRune("(),;.*=<>?:[]{}+-", rune(c)):
			toks = append(toks, token{kind: tokPunct, text: string(c), pos: i})
			i++
		default:
			return nil, syntaxErrorf("line 1:%d token recognition error at: '%c'", i, c)
		}
	}
	for i := range toks {
		end := len(s)
		if i+1 < len(toks) {
			end = toks[i+1].pos
		}
		toks[i].raw = strings.TrimSpace(s[toks[i].pos:end])
	}
	return append(toks, token{kind: tokEOF, pos: len(s)}), nil
}
