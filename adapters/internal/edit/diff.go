package edit

import (
	"fmt"
	"strings"

	"github.com/aymanbagabas/go-udiff"
	"github.com/aymanbagabas/go-udiff/lcs"
)

// diffContext is the number of unchanged lines shown around each change.
const diffContext = 3

// Diff returns a unified diff (3 lines of context) from a to b, with the
// file names in the --- and +++ lines. nil a or b means the file does not
// exist (shown as /dev/null). Equal inputs give "". Line ends are shown as
// \n (a CRLF file's \r would garble the terminal).
func Diff(aName, bName string, a, b []byte) string {
	if string(a) == string(b) && (a == nil) == (b == nil) {
		return ""
	}
	if a == nil {
		aName = "/dev/null"
	}
	if b == nil {
		bName = "/dev/null"
	}
	header := fmt.Sprintf("--- %s\n+++ %s\n", aName, bName)
	if string(a) == string(b) { // an empty file created or removed
		return header
	}
	out, err := udiff.ToUnified(aName, bName, string(a), lineEdits(string(a), string(b)), diffContext)
	if err != nil { // cannot happen: the edits come from the same text
		return header + "(no diff: " + err.Error() + ")\n"
	}
	return strings.ReplaceAll(out, "\r\n", "\n")
}

// lineEdits diffs a and b line by line: each distinct line becomes one
// symbol, so the LCS runs over lines and a change never starts mid-line
// (go-udiff's own Bytes diffs characters, which can mark an unchanged line
// as replaced).
func lineEdits(a, b string) []udiff.Edit {
	ids := map[string]rune{}
	symbols := func(lines []string) []rune {
		out := make([]rune, len(lines))
		for i, l := range lines {
			id, ok := ids[l]
			if !ok {
				id = rune(len(ids))
				ids[l] = id
			}
			out[i] = id
		}
		return out
	}
	al, bl := splitLines(a), splitLines(b)
	offsets := make([]int, len(al)+1) // byte offset in a of each line start
	for i, l := range al {
		offsets[i+1] = offsets[i] + len(l)
	}
	var edits []udiff.Edit
	for _, d := range lcs.DiffRunes(symbols(al), symbols(bl)) {
		edits = append(edits, udiff.Edit{Start: offsets[d.Start], End: offsets[d.End], New: strings.Join(bl[d.ReplStart:d.ReplEnd], "")})
	}
	return edits
}

// splitLines cuts s after each \n; a last line without one is kept.
func splitLines(s string) []string {
	lines := strings.SplitAfter(s, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}
