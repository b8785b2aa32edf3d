package docnames

import (
	"encoding/json"
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// root is the repository's root: the main module, with gocqlv2, bench/peers and bench/fleet,
// modules of their own, below it.
const root = "../../.."

// external are names the docs mention on purpose that no Go source indexed declares, each with
// where it is from. Keep it short: a Go name of gocql or the standard library resolves through
// the index instead.
var external = map[string]string{
	// docs/peers.md: how each other driver pins a query to a node, and its local-DC setting.
	"Statement.setNode":               "Java driver 4",
	"withLocalDatacenter":             "Java driver 4",
	"SingleTargetLoadBalancingPolicy": "scylla-rust-driver",
	"Session.execute":                 "the Python driver",
	"localDataCenter":                 "the Node.js driver",
	// docs/fleet.md: the java lane's sessions and the node metric its setups are read from.
	"CqlSession":             "Java driver 4",
	"errors.connection.init": "Java driver 4's node metric",
	// Cassandra's: an error, a server-side class, and the source cqlsim/README.md follows.
	"Overloaded":                        "the native protocol's error 0x1001",
	"PEMBasedSslContextFactory":         "Cassandra's server-side TLS class",
	"ProtocolVersion.supportedVersions": "Cassandra's ProtocolVersion (Java)",
	"ProtocolVersion.decode":            "Cassandra's ProtocolVersion (Java)",
	"OptionsMessage":                    "Cassandra's OPTIONS request (Java)",
	// Comments that say which Java code ours follows.
	"onRestart": "Cassandra's Gossiper.onRestart (cqlsim/gossip.go)",
	"nextInt":   "Java's Random.nextInt (lab/drivers.go)",
	// Placeholders: cqlsim's racks are rack1..rackN; apisurface lists "Type.Member" names.
	"rackN":       "cqlsim/README.md",
	"Type.Member": "internal/testkit/apisurface",
}

// std are the standard packages whose names the docs mention (`errors.As`, `*net.OpError`,
// `t.Cleanup`).
var std = []string{"context", "crypto/tls", "errors", "net", "net/http/httptrace", "testing", "testing/synctest", "time"}

var (
	indexOnce sync.Once
	index     *Index
	indexErr  error
)

// repoIndex is the declarations of every module of the repository (test files included), of
// gocql v1 and v2 as the modules require them, and of the std packages.
func repoIndex(t *testing.T) *Index {
	t.Helper()
	if _, err := os.Stat(filepath.Join(root, "gocqlv2", "go.mod")); os.IsNotExist(err) {
		t.Skip("gocqlv2 is not beside this module: the docs name its declarations")
	}
	indexOnce.Do(func() {
		ix := NewIndex()
		if indexErr = ix.AddTree(root, true); indexErr != nil {
			return
		}
		for _, m := range []struct{ dir, path string }{
			{root, "github.com/gocql/gocql"},
			{filepath.Join(root, "gocqlv2"), "github.com/apache/cassandra-gocql-driver/v2"},
		} {
			var dir string
			if dir, indexErr = moduleDir(m.dir, m.path); indexErr != nil {
				return
			}
			if indexErr = ix.AddTree(dir, false); indexErr != nil {
				return
			}
		}
		out, err := exec.Command("go", "env", "GOROOT").Output()
		if err != nil {
			indexErr = fmt.Errorf("go env GOROOT: %w", err)
			return
		}
		for _, p := range std {
			if indexErr = ix.AddDir(filepath.Join(strings.TrimSpace(string(out)), "src", p)); indexErr != nil {
				return
			}
		}
		index = ix
	})
	if indexErr != nil {
		t.Fatal(indexErr)
	}
	return index
}

// moduleDir is the directory of module path at the version the module in dir requires,
// downloaded if the module cache does not have it.
func moduleDir(dir, path string) (string, error) {
	cmd := exec.Command("go", "mod", "download", "-json", path)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go mod download %s in %s: %w", path, dir, err)
	}
	var m struct{ Dir string }
	if err := json.Unmarshal(out, &m); err != nil || m.Dir == "" {
		return "", fmt.Errorf("go mod download %s in %s: no directory in %s", path, dir, out)
	}
	return m.Dir, nil
}

// A backquoted Go name in README.md, cqlsim/README.md, docs/*.md or a package doc of any module
// names a declaration of one of the modules (or of gocql, or the standard library): a renamed or
// removed function, type, field, method or test fails here with the page and line that still
// name it.
func TestDocsNameOnlyWhatExists(t *testing.T) {
	ix := repoIndex(t)
	all := repoMentions(t)
	checkNames(t, ix, all, func(m located) bool { return m.doc }, 500, "the docs")
}

// Every other comment of every module, test files included, names only what exists too: a doc
// comment still under a function's old name, a test or field that was renamed.
func TestCommentsNameOnlyWhatExists(t *testing.T) {
	ix := repoIndex(t)
	all := repoMentions(t)
	checkNames(t, ix, all, func(m located) bool { return !m.doc }, 1000, "comments")
}

// Each name of external is still mentioned somewhere and still declared by nothing indexed, so
// the list does not outlive its reasons.
func TestExternalNamesAreNeeded(t *testing.T) {
	ix := repoIndex(t)
	mentioned := map[string]bool{}
	for _, m := range repoMentions(t) {
		k := strings.Join(m.Parts, ".")
		if _, ok := external[k]; ok {
			mentioned[k] = true
			if ix.Resolves(m.Mention) {
				t.Errorf("%s:%d: %s resolves: drop it from external", m.file, m.Line, m.Text)
			}
		}
	}
	for k := range external {
		if !mentioned[k] {
			t.Errorf("external lists %s, which nothing mentions any more: drop it", k)
		}
	}
}

// checkNames fails t with every mention that which selects, that neither resolves nor is
// external, as file:line: name; and when fewer than least were checked (the extraction broke).
func checkNames(t *testing.T, ix *Index, all []located, which func(located) bool, least int, what string) {
	t.Helper()
	var stale []string
	checked := 0
	for _, m := range all {
		if !which(m) {
			continue
		}
		checked++
		if _, ok := external[strings.Join(m.Parts, ".")]; ok || ix.Resolves(m.Mention) {
			continue
		}
		stale = append(stale, fmt.Sprintf("%s:%d: %s", m.file, m.Line, m.Text))
	}
	t.Logf("%s: %d names checked", what, checked)
	if checked < least {
		t.Errorf("only %d names in %s checked: the pages or the extraction went missing", checked, what)
	}
	if len(stale) > 0 {
		t.Errorf("%d names in %s that nothing declares (rename them to what exists, or reword):\n%s",
			len(stale), what, strings.Join(stale, "\n"))
	}
}

// located is a mention with its file (relative to root) and whether it is in the docs (a page or
// a package doc) or another comment; its Line is the file's.
type located struct {
	Mention
	file string
	doc  bool
}

// repoMentions returns the mentions of the pages and of every comment of every module.
func repoMentions(t *testing.T) []located {
	t.Helper()
	pages, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	pages = append(pages, filepath.Join(root, "README.md"), filepath.Join(root, "cqlsim", "README.md"))
	var out []located
	add := func(file string, first int, ms []Mention, doc bool) {
		rel, err := filepath.Rel(root, file)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range ms {
			m.Line += first - 1
			out = append(out, located{Mention: m, file: filepath.ToSlash(rel), doc: doc})
		}
	}
	for _, p := range pages {
		src, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		add(p, 1, Markdown(string(src)), true)
	}
	comments, err := goComments(root)
	if err != nil {
		t.Fatal(err)
	}
	docs := 0
	for _, c := range comments {
		if c.packageDoc {
			docs++
		}
		add(c.file, c.line, PackageDoc(c.text), c.packageDoc)
	}
	if docs < 30 {
		t.Fatalf("only %d package docs found under %s", docs, root)
	}
	return out
}

type comment struct {
	file       string
	line       int // of the comment's first line
	text       string
	packageDoc bool
}

// goComments returns the comments of every Go file under dir (testdata, node_modules and hidden
// directories excepted), each as its lines without comment markers. A package doc is one of a
// non-test file.
func goComments(dir string) ([]comment, error) {
	var out []comment
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); path != dir && (n == "testdata" || n == "node_modules" || strings.HasPrefix(n, ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		for _, g := range f.Comments {
			var lines []string
			for _, c := range g.List {
				text := strings.TrimPrefix(c.Text, "//")
				text = strings.TrimSuffix(strings.TrimPrefix(text, "/*"), "*/")
				lines = append(lines, strings.Split(text, "\n")...)
			}
			out = append(out, comment{
				file:       path,
				line:       fset.Position(g.Pos()).Line,
				text:       strings.Join(lines, "\n"),
				packageDoc: g == f.Doc && !strings.HasSuffix(path, "_test.go"),
			})
		}
		return nil
	})
	return out, err
}

// The check fails on the names it is for, and passes the spans that are not Go names.
func TestStaleNamesAreFound(t *testing.T) {
	ix := repoIndex(t)
	page := strings.Join([]string{
		"Stale: `reconnect.Handler`, `newWithConfigAndMore`, `TestMemory`, `controlconn.Governor.Offf`,",
		"`*controlconn.Conection`, `Status().Skipped`, `NoSuchType.Close`, `cc.NoSuchMethod()`.",
		"In prose, controlconn.Nothing and TestNothingHere; in a command `go test -run TestNoSuch ./x/`;",
		"prose words: newWithConfigGone is stale, setupConn and repoIndex are not; gRPC, vN, nPK.",
		"```",
		"CQLCONTROL_LONG=1 go test -run 'TestAlsoNoSuch$' ./integration/",
		"```",
		"Names: `controlconn.New`, `Governor{Off: true}`, `*realcluster.Sim`, `cc.Status()`,",
		"`Status().SkippedPeers`, `gocql.HostDialer`, `heartBeat`, `errors.As`, `t.Cleanup`,",
		"`net/http/httptrace.ClientTrace`, `TestDocsNameOnlyWhatExists`, `go test -run TestDocs ./x/`.",
		"Not names: `scheduled`, `host_up`, `TOPOLOGY_CHANGE`, `system.peers_v2`, `results.json`,",
		"`controlconn/hosttable.go`, `make test`, `--connect-timeout 30s`, `Makefile`, `1.5 s`,",
		"`cqlcontrol_state{state=\"connected\"} == 1`, docs/governor.md, Node.js, e.g. this.",
	}, "\n")
	var got []string
	for _, m := range Markdown(page) {
		if !ix.Resolves(m) {
			got = append(got, fmt.Sprintf("%d:%s", m.Line, m.Text))
		}
	}
	want := []string{
		"1:reconnect.Handler", "1:newWithConfigAndMore", "1:TestMemory", "1:controlconn.Governor.Offf",
		"2:*controlconn.Conection", "2:Status().Skipped", "2:NoSuchType.Close", "2:cc.NoSuchMethod()",
		"3:TestNoSuch", "3:TestNothingHere", "3:controlconn.Nothing", "4:newWithConfigGone", "6:TestAlsoNoSuch",
	}
	slices.Sort(got)
	slices.Sort(want)
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("unresolved:\n got %v\nwant %v", got, want)
	}
}
