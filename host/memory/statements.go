package memory

import (
	"regexp"
	"strings"

	"github.com/metaclaw-go/metaclaw/host/safety"
)

// A user message is read as statements: its sentences, with two shapes of
// corrective feedback taken apart first —
//
//   - enumerated requirements ("Our reports need: (1) …, (2) …", "1. … 2. …",
//     a bullet list after a colon) become one statement per item, each
//     carrying the lead's subject ("Our reports need" + item);
//   - a statement that points at what follows ("… the following header:",
//     "in this format:") keeps the fenced block or list attached to it,
//     bounded, so the actual requirement (the field names in the block)
//     survives.
//
// Fenced blocks attached to nothing (pasted code, logs), quotes and tables
// are not statements.

// statement is one thing the user said.
type statement struct {
	text   string
	block  string // attached fenced block or list, bounded by maxBlock
	defect bool   // an item of a list of issues with an answer ("The output has issues: …")
}

// maxBlock bounds an attached block.
const maxBlock = 400

// maxStatements bounds what one message yields.
const maxStatements = 80

type chunkKind int

const (
	chunkText chunkKind = iota
	chunkFence
	chunkList
)

type chunk struct {
	kind  chunkKind
	lines []string // text: one line; fence: with its fences; list: one entry per item
}

var listItem = regexp.MustCompile(`^(?:[-*•·+]\s+|\(?(?:\d{1,2}|[a-h])[.)]\s+)`)

// chunks splits a message into text lines, fenced blocks and lists.
func chunks(text string) []chunk {
	lines := strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n")
	var out []chunk
	for i := 0; i < len(lines); i++ {
		raw := lines[i]
		line := strings.TrimSpace(raw)
		switch {
		case strings.HasPrefix(line, "```"):
			c := chunk{kind: chunkFence, lines: []string{line}}
			for i++; i < len(lines); i++ {
				c.lines = append(c.lines, strings.TrimRight(lines[i], " \t"))
				if strings.HasPrefix(strings.TrimSpace(lines[i]), "```") {
					break
				}
			}
			out = append(out, c)
		case line == "", strings.HasPrefix(line, ">"), strings.HasPrefix(line, "|"), strings.HasPrefix(line, "$ "):
			out = append(out, chunk{kind: chunkText}) // a break: nothing attaches across it
		case listItem.MatchString(line):
			if n := len(out); n > 0 && out[n-1].kind == chunkList {
				out[n-1].lines = append(out[n-1].lines, line)
			} else {
				out = append(out, chunk{kind: chunkList, lines: []string{line}})
			}
		case len(out) > 0 && out[len(out)-1].kind == chunkList && strings.HasPrefix(raw, "  "):
			// An indented continuation of the last item.
			l := out[len(out)-1].lines
			l[len(l)-1] += " " + line
		default:
			out = append(out, chunk{kind: chunkText, lines: []string{line}})
		}
	}
	return out
}

// pointsAhead: the statement refers to what follows it.
var pointsAhead = safety.PointsAhead

// statements reads a message (see the comment at the top of the file).
func statements(text string) []statement {
	cs := chunks(text)
	var out []statement
	add := func(s statement) {
		if len(out) < maxStatements && strings.TrimSpace(s.text) != "" {
			out = append(out, s)
		}
	}
	for i := 0; i < len(cs); i++ {
		c := cs[i]
		switch c.kind {
		case chunkFence:
			continue // pasted code or output attached to nothing
		case chunkList:
			defect := false
			for _, item := range c.lines {
				add(statement{text: stripMarker(item), defect: defect})
			}
			continue
		}
		if len(c.lines) == 0 {
			continue
		}
		ss := lineStatements(c.lines[0])
		if len(ss) == 0 {
			continue
		}
		last := &ss[len(ss)-1]
		lead := strings.TrimSpace(last.text)
		if strings.HasSuffix(lead, ":") || strings.HasSuffix(lead, "：") {
			if i+1 < len(cs) && cs[i+1].kind == chunkFence {
				last.block = boundBlock(cs[i+1].lines, true)
				i++
			} else if i+1 < len(cs) && cs[i+1].kind == chunkList {
				items := cs[i+1].lines
				i++
				if pointsAhead.MatchString(lead) {
					last.block = boundBlock(items, false)
				} else {
					ss = ss[:len(ss)-1]
					for _, s := range ss {
						add(s)
					}
					for _, s := range enumerate(lead, items) {
						add(s)
					}
					continue
				}
			}
		}
		for _, s := range ss {
			add(s)
		}
	}
	return out
}

// lineStatements splits one line into statements, taking an inline
// enumeration ("… need: (1) x, (2) y.") apart.
func lineStatements(line string) []statement {
	var out []statement
	if lead, items, rest, ok := inlineEnumeration(line); ok {
		before := sentences(lead)
		if len(before) > 0 {
			lead = before[len(before)-1]
			for _, s := range before[:len(before)-1] {
				out = append(out, statement{text: s})
			}
		}
		out = append(out, enumerate(lead, items)...)
		for _, s := range sentences(rest) {
			out = append(out, statement{text: s})
		}
		return out
	}
	for _, s := range sentences(line) {
		defect := false
		if rest, ok := afterDefectLead(s); ok {
			s, defect = rest, true
		}
		for _, c := range clauses(s) {
			out = append(out, statement{text: c, defect: defect})
		}
	}
	return out
}

// defectLead introduces what is wrong with an answer on the same line ("The
// output has issues: the timestamps must …", "The time fields are
// incorrect: every time field needs …"): what follows the colon is the
// statement, read as feedback.
var defectLead = mustGuard(`(?i)^[^:：]{0,60}?\b(?:(?:has|have|had|with|found|there (?:are|were))\s+(?:(?:some|a few|several|two|three|many|the same|these)\s+)?(?:issues?|problems?|errors?|mistakes?|bugs?)|(?:is|are|was|were)\s+(?:still\s+|all\s+)?(?:wrong|incorrect|not right|broken|off))\s*[:：]\s+`)

func afterDefectLead(s string) (string, bool) {
	loc := defectLead.FindStringIndex(s)
	if loc == nil {
		return s, false
	}
	rest := strings.TrimSpace(s[loc[1]:])
	if m := headSubject.FindStringSubmatch(s[:loc[1]]); m != nil {
		rest = itPronoun.ReplaceAllString(rest, "the "+m[1]+" ") // "it" is the lead's subject
	}
	if len(Terms(rest)) < 3 {
		return s, false
	}
	return capitalize(rest), true
}

// clauseJoint joins two statements in one sentence ("The file name should
// be X, and the front-matter is missing reviewed_at").
var clauseJoint = mustGuard(`(?i)(?:,|;)\s+(?:and|but|also|plus)\s+(?:the|this|your|all|every|each|our)\s`)

// clauses splits a sentence at joints after which a new subject starts.
func clauses(s string) []string {
	locs := clauseJoint.FindAllStringIndex(s, 4)
	if len(locs) == 0 {
		return []string{s}
	}
	var out []string
	start := 0
	for _, l := range locs {
		out = append(out, strings.TrimSpace(s[start:l[0]]))
		// Keep the determiner: skip the punctuation and the conjunction.
		rest := s[l[0]+1 : l[1]]
		rest = strings.TrimSpace(rest)
		sp := strings.IndexByte(rest, ' ')
		start = l[0] + 1 + strings.Index(s[l[0]+1:], rest) + sp + 1
	}
	out = append(out, strings.TrimSpace(s[start:]))
	return out
}

var enumMarker = mustGuard(`(?:^|[\s:;,])(\((\d{1,2}|[a-h])\)|(\d{1,2})[.)]|([a-h])\))\s`)

// inlineEnumeration finds a run of markers numbered 1, 2, … (or a, b, …)
// in a line: the text before the first, the items, and what follows the
// last item's sentence.
func inlineEnumeration(line string) (lead string, items []string, rest string, ok bool) {
	ms := enumMarker.FindAllStringSubmatchIndex(line, -1)
	if len(ms) < 2 {
		return "", nil, "", false
	}
	label := func(m []int) string {
		for _, g := range []int{4, 6, 8} {
			if m[g] >= 0 {
				return line[m[g]:m[g+1]]
			}
		}
		return ""
	}
	// The first run of consecutive labels starting at 1 or a.
	start := -1
	var run [][]int
	for _, m := range ms {
		l := label(m)
		switch {
		case start < 0 && (l == "1" || l == "a"):
			start = m[2]
			run = [][]int{m}
		case start >= 0 && next(label(run[len(run)-1])) == l:
			run = append(run, m)
		}
	}
	if len(run) < 2 {
		return "", nil, "", false
	}
	lead = strings.TrimSpace(line[:run[0][2]])
	if strings.HasSuffix(lead, "?") || strings.HasSuffix(lead, "？") {
		return "", nil, "", false // the options of a question
	}
	for k, m := range run {
		end := len(line)
		if k+1 < len(run) {
			end = run[k+1][2]
		}
		items = append(items, line[m[3]:end])
	}
	// The last item ends with its sentence.
	lastItem := items[len(items)-1]
	if ss := sentences(lastItem); len(ss) > 1 {
		items[len(items)-1] = ss[0]
		rest = strings.TrimSpace(lastItem[strings.Index(lastItem, ss[0])+len(ss[0]):])
	}
	for k := range items {
		items[k] = trimItem(items[k])
	}
	return lead, items, rest, true
}

func next(label string) string {
	if label == "" {
		return ""
	}
	if label[0] >= 'a' && label[0] <= 'z' {
		return string(label[0] + 1)
	}
	n := 0
	for _, r := range label {
		n = n*10 + int(r-'0')
	}
	return itoa(n + 1)
}

var itemTail = regexp.MustCompile(`(?i)(?:[\s,;]+(?:and|or))?[\s,;.]*$`)

func trimItem(s string) string {
	return strings.TrimSpace(itemTail.ReplaceAllString(strings.TrimSpace(s), ""))
}

func stripMarker(item string) string {
	return trimItem(listItem.ReplaceAllString(strings.TrimSpace(item), ""))
}

var (
	// defectHead: the lead introduces problems with an answer; its items
	// are statements of their own.
	defectHead = regexp.MustCompile(`(?i)\b(?:issues?|problems?|errors?|mistakes?|bugs?|wrong|incorrect|fix(?:es)?|corrections?|missing)\b|问题|错误|不对`)
	// labelHead: the lead only names the list ("Rules:", "House style:").
	labelHead = regexp.MustCompile(`(?i)^(?:(?:our|the|some|my|a few|house|team|style|coding|formatting|general|important)\s+)*(?:rules?|requirements?|conventions?|guidelines?|notes?|reminders?|remember|style|checklist|constraints?|standards?|policy|policies|dos and don'ts|please|also|again|to recap|in short|summary|规则|要求|规范|注意)\W*$`)
)

var (
	headSubject = regexp.MustCompile(`(?i)^(?:the|this|your|our)\s+((?:[\p{L}\p{N}_\-]+\s+){0,2}?[\p{L}\p{N}_\-]+)\s+(?:still\s+)?(?:has|have|had|contains?|shows?)\b`)
	itPronoun   = regexp.MustCompile(`(?i)^it\s+`)
)

// enumerate turns a lead and its items into statements: items of a list of
// problems or of a mere label stand alone; otherwise each item completes
// the lead ("Our reports need" + "a file name of the form …").
func enumerate(lead string, items []string) []statement {
	head := strings.TrimSpace(strings.TrimRight(strings.TrimSpace(lead), ":："))
	defect := defectHead.MatchString(head)
	alone := defect || head == "" || labelHead.MatchString(head)
	// "The macro has issues: - it doesn't open with …": "it" is the macro.
	var it string
	if m := headSubject.FindStringSubmatch(head); m != nil && defect {
		it = "the " + m[1] + " "
	}
	var out []statement
	for _, item := range items {
		item = trimItem(stripMarker(item))
		if item == "" {
			continue
		}
		if alone {
			if it != "" {
				item = itPronoun.ReplaceAllString(item, it)
			}
			out = append(out, statement{text: item, defect: defect})
			continue
		}
		out = append(out, statement{text: head + " " + lowerFirst(item)})
	}
	return out
}

// lowerFirst lower-cases a leading capital unless the word looks like a
// name or an identifier (all caps, inner capitals).
func lowerFirst(s string) string {
	w := strings.Fields(s + " x")[0]
	if len(w) < 2 || strings.ToLower(w[1:]) != w[1:] || !(w[0] >= 'A' && w[0] <= 'Z') {
		return s
	}
	return strings.ToLower(s[:1]) + s[1:]
}

// boundBlock joins an attached block, at most maxBlock bytes (whole lines,
// then an ellipsis line). A fence keeps its fences.
func boundBlock(lines []string, fenced bool) string {
	body := lines
	if fenced {
		body = lines[1:]
		if n := len(body); n > 0 && strings.HasPrefix(strings.TrimSpace(body[n-1]), "```") {
			body = body[:n-1]
		}
	}
	budget := maxBlock
	if fenced {
		budget -= 8
	}
	var kept []string
	used := 0
	for _, l := range body {
		l = strings.TrimRight(l, " \t")
		if used+len(l)+1 > budget-2 {
			kept = append(kept, "…")
			break
		}
		kept = append(kept, l)
		used += len(l) + 1
	}
	for len(kept) > 0 && strings.TrimSpace(kept[len(kept)-1]) == "" {
		kept = kept[:len(kept)-1]
	}
	if len(kept) == 0 {
		return ""
	}
	if fenced {
		return "```\n" + strings.Join(kept, "\n") + "\n```"
	}
	return strings.Join(kept, "\n")
}

// splitContent separates a unit's statement from its attached block.
func splitContent(content string) (line, block string) {
	if i := strings.IndexByte(content, '\n'); i >= 0 {
		return content[:i], content[i+1:]
	}
	return content, ""
}

// normalizeContent is how content is stored: the statement on one line,
// then the attached block (if any) with its line breaks.
func normalizeContent(content string) string {
	line, block := splitContent(strings.TrimSpace(content))
	line = oneLine(line, 600)
	if block = strings.TrimSpace(block); block == "" {
		return line
	}
	if len(block) > maxBlock+8 {
		block = boundBlock(strings.Split(block, "\n"), false)
	}
	return line + "\n" + block
}
