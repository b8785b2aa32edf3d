// Package docnames checks that the docs and comments name only what exists: each Go name that a
// Markdown page, a package doc or a comment mentions (a backquoted `controlconn.New`,
// `Governor.Off` or `setupConn`, a test name, a pkg.Name or a mixed-case word of prose) must
// resolve to a declaration of the Go source indexed (every module of this repository, gocql v1
// and v2, a few standard packages), so a renamed or removed name fails a test instead of living
// on in a page.
//
// Index holds the declarations (top-level names, methods, struct fields and interface methods,
// test functions included, and every identifier for prose words); Markdown and PackageDoc find
// the names a text mentions; Index.Resolves says whether one names something.
package docnames
