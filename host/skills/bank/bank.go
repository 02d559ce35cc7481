// Package bank is MetaClaw's built-in skill bank: SKILL.md folders written
// for the project (coding, debugging, security, data, writing and
// communication, agentic workflow), embedded in the binary and installed by
// `metaclaw skills install-bank`.
package bank

import (
	"embed"
	"io/fs"
	"sort"
)

//go:embed */SKILL.md
var files embed.FS

// FS holds <name>/SKILL.md for every bank skill.
func FS() fs.FS { return files }

// Names lists the bank's skill folders, sorted.
func Names() []string {
	ents, _ := fs.ReadDir(files, ".")
	var out []string
	for _, e := range ents {
		if e.IsDir() {
			out = append(out, e.Name())
		}
	}
	sort.Strings(out)
	return out
}
