package edit

import (
	"fmt"
	"strings"
)

// Diff returns a unified diff (3 lines of context) from a to b, with the
// file names in the --- and +++ lines. nil a or b means the file does not
// exist (shown as /dev/null). Equal inputs give "".
func Diff(aName, bName string, a, b []byte) string {
	if string(a) == string(b) && (a == nil) == (b == nil) {
		return ""
	}
	al, bl := splitLines(a), splitLines(b)
	if a == nil {
		aName = "/dev/null"
	}
	if b == nil {
		bName = "/dev/null"
	}
	ops := diffLines(al, bl)
	var out strings.Builder
	fmt.Fprintf(&out, "--- %s\n+++ %s\n", aName, bName)
	const ctx = 3
	// group ops into hunks
	type op struct {
		kind byte // ' ', '-', '+'
		line string
		ai   int // line number in a (0-based) of this op or the next a line
		bi   int
	}
	var list []op
	ai, bi := 0, 0
	for _, o := range ops {
		switch o {
		case ' ':
			list = append(list, op{' ', al[ai], ai, bi})
			ai++
			bi++
		case '-':
			list = append(list, op{'-', al[ai], ai, bi})
			ai++
		case '+':
			list = append(list, op{'+', bl[bi], ai, bi})
			bi++
		}
	}
	i := 0
	for i < len(list) {
		// find next change
		for i < len(list) && list[i].kind == ' ' {
			i++
		}
		if i >= len(list) {
			break
		}
		start := max(0, i-ctx)
		end := i
		// extend while changes are within 2*ctx of each other
		for {
			for end < len(list) && list[end].kind != ' ' {
				end++
			}
			j := end
			for j < len(list) && list[j].kind == ' ' && j-end < 2*ctx {
				j++
			}
			if j < len(list) && list[j].kind != ' ' {
				end = j
				continue
			}
			end = min(len(list), end+ctx)
			break
		}
		aStart, bStart := list[start].ai, list[start].bi
		aCount, bCount := 0, 0
		for _, o := range list[start:end] {
			if o.kind != '+' {
				aCount++
			}
			if o.kind != '-' {
				bCount++
			}
		}
		fmt.Fprintf(&out, "@@ -%s +%s @@\n", hunkRange(aStart, aCount), hunkRange(bStart, bCount))
		for _, o := range list[start:end] {
			line := o.line
			out.WriteByte(o.kind)
			if strings.HasSuffix(line, "\n") {
				out.WriteString(strings.TrimSuffix(strings.TrimSuffix(line, "\n"), "\r"))
				out.WriteByte('\n')
			} else {
				out.WriteString(line)
				out.WriteString("\n\\ No newline at end of file\n")
			}
		}
		i = end
	}
	return out.String()
}

func hunkRange(start, count int) string {
	if count == 0 {
		return fmt.Sprintf("%d,0", start)
	}
	if count == 1 {
		return fmt.Sprintf("%d", start+1)
	}
	return fmt.Sprintf("%d,%d", start+1, count)
}

func splitLines(b []byte) []string {
	if len(b) == 0 {
		return nil
	}
	ls := strings.SplitAfter(string(b), "\n")
	if ls[len(ls)-1] == "" {
		ls = ls[:len(ls)-1]
	}
	return ls
}

// diffLines returns an edit script of ' ', '-' and '+' turning a into b:
// the common prefix and suffix are trimmed, the middle is an LCS.
func diffLines(a, b []string) []byte {
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	am, bm := a[pre:len(a)-suf], b[pre:len(b)-suf]
	var ops []byte
	for range pre {
		ops = append(ops, ' ')
	}
	if len(am)*len(bm) > 4_000_000 {
		// too big for the table: replace the middle wholesale
		for range am {
			ops = append(ops, '-')
		}
		for range bm {
			ops = append(ops, '+')
		}
	} else {
		n, m := len(am), len(bm)
		t := make([][]int32, n+1)
		for i := range t {
			t[i] = make([]int32, m+1)
		}
		for i := n - 1; i >= 0; i-- {
			for j := m - 1; j >= 0; j-- {
				if am[i] == bm[j] {
					t[i][j] = t[i+1][j+1] + 1
				} else {
					t[i][j] = max(t[i+1][j], t[i][j+1])
				}
			}
		}
		i, j := 0, 0
		for i < n && j < m {
			switch {
			case am[i] == bm[j]:
				ops = append(ops, ' ')
				i++
				j++
			case t[i+1][j] >= t[i][j+1]:
				ops = append(ops, '-')
				i++
			default:
				ops = append(ops, '+')
				j++
			}
		}
		for ; i < n; i++ {
			ops = append(ops, '-')
		}
		for ; j < m; j++ {
			ops = append(ops, '+')
		}
	}
	for range suf {
		ops = append(ops, ' ')
	}
	return ops
}
