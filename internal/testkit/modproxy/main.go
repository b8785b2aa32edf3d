// Command modproxy writes a file-based Go module proxy (the layout GOPROXY=file://dir reads:
// <module>/@v/list, <version>.info, <version>.mod, <version>.zip) that serves the modules of
// this checkout at one version, so that a module outside the tree can be built against them as
// a user would get them: replace directives ignored, no workspace (make consumer, .ci/consumer).
//
//	go run ./internal/testkit/modproxy -out DIR -version v0.1.0 . gocqlv2
//
// Each argument is a module directory. Its zip holds the files git knows there (tracked, and
// untracked but not ignored, so that uncommitted work is what gets built), less nested modules,
// as `go mod download` lays them out. A served module that requires another served module at a
// different version is an error: the consumer would not build what this checkout holds.
package main

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

func main() {
	out := flag.String("out", "", "the proxy directory to write")
	version := flag.String("version", "v0.1.0", "the version to serve every module at")
	flag.Parse()
	if *out == "" || flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: modproxy -out DIR [-version v0.1.0] MODULE_DIR...")
		os.Exit(2)
	}
	if err := run(*out, *version, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "modproxy:", err)
		os.Exit(1)
	}
}

type module struct {
	dir, path string
	gomod     []byte
}

func run(out, version string, dirs []string) error {
	mods := make([]module, 0, len(dirs))
	for _, d := range dirs {
		gomod, err := os.ReadFile(filepath.Join(d, "go.mod"))
		if err != nil {
			return err
		}
		p := modulePath(gomod)
		if p == "" {
			return fmt.Errorf("%s/go.mod: no module line", d)
		}
		mods = append(mods, module{dir: d, path: p, gomod: gomod})
	}
	for _, m := range mods {
		for _, o := range mods {
			if v := required(m.gomod, o.path); v != "" && v != version {
				return fmt.Errorf("%s requires %s %s, not the %s served", m.path, o.path, v, version)
			}
		}
	}
	for _, m := range mods {
		if err := write(out, version, m); err != nil {
			return fmt.Errorf("%s: %w", m.path, err)
		}
	}
	return nil
}

var moduleLine = regexp.MustCompile(`(?m)^module\s+(\S+)`)

func modulePath(gomod []byte) string {
	if m := moduleLine.FindSubmatch(gomod); m != nil {
		return strings.Trim(string(m[1]), `"`)
	}
	return ""
}

// required is the version gomod requires of path ("" if none), in a require line or block.
func required(gomod []byte, path string) string {
	re := regexp.MustCompile(`(?m)^\s*(?:require\s+)?` + regexp.QuoteMeta(path) + `\s+(v\S+)`)
	if m := re.FindSubmatch(gomod); m != nil {
		return string(m[1])
	}
	return ""
}

func write(out, version string, m module) error {
	dir := filepath.Join(out, filepath.FromSlash(escape(m.path)), "@v")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	info, err := json.Marshal(struct {
		Version string
		Time    time.Time
	}{version, time.Now().UTC().Truncate(time.Second)})
	if err != nil {
		return err
	}
	files, err := moduleFiles(m.dir)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	prefix := m.path + "@" + version + "/"
	for _, f := range files {
		if err := addFile(zw, prefix+f, filepath.Join(m.dir, filepath.FromSlash(f))); err != nil {
			return err
		}
	}
	if err := zw.Close(); err != nil {
		return err
	}
	for name, data := range map[string][]byte{
		"list":            []byte(version + "\n"),
		version + ".info": info,
		version + ".mod":  m.gomod,
		version + ".zip":  buf.Bytes(),
	} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

func addFile(zw *zip.Writer, name, src string) error {
	f, err := os.Open(src)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }() // read only
	w, err := zw.Create(name)
	if err != nil {
		return err
	}
	_, err = io.Copy(w, f)
	return err
}

// moduleFiles lists, slash-separated and relative to dir, the regular files git knows in dir
// that belong to its module: not under a directory with a go.mod of its own.
func moduleFiles(dir string) ([]string, error) {
	cmd := exec.Command("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", ".")
	cmd.Dir = dir
	cmd.Stderr = os.Stderr
	outb, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("git ls-files: %w", err)
	}
	var files []string
	for _, f := range strings.Split(string(outb), "\x00") {
		if f == "" || inNestedModule(dir, f) {
			continue
		}
		st, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(f)))
		if errors.Is(err, fs.ErrNotExist) {
			continue // deleted in the work tree
		}
		if err != nil {
			return nil, err
		}
		if st.Mode().IsRegular() {
			files = append(files, f)
		}
	}
	return files, nil
}

func inNestedModule(dir, f string) bool {
	for d := path.Dir(f); d != "."; d = path.Dir(d) {
		if _, err := os.Stat(filepath.Join(dir, filepath.FromSlash(d), "go.mod")); err == nil {
			return true
		}
	}
	return false
}

// escape is the module path as the proxy protocol spells it: an upper-case letter as '!' and
// its lower case.
func escape(p string) string {
	var b strings.Builder
	for _, r := range p {
		if 'A' <= r && r <= 'Z' {
			b.WriteByte('!')
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	return b.String()
}
