// Package apisurface lists a package's exported identifiers from its source and the list its
// doc.go promises, so that each public package can test that the two agree: adding or removing
// an exported name then fails that package's tests until its documented surface says so.
package apisurface
