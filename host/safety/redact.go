package safety

import (
	"regexp"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Redaction runs before anything is stored or sent to an extraction LLM:
// memory (turn text on ingestion, content given to add/store/edit/import)
// and the proxy's stored turn bodies (RedactJSON). A secret is replaced by
// "[REDACTED:<kind>]"; redacting twice changes nothing.

// RedactedPrefix starts every replacement.
const RedactedPrefix = "[REDACTED:"

type redactRule struct {
	kind string
	re   *regexp.Regexp
	// group, when > 0, is the submatch that holds the secret (the rest of
	// the match, e.g. "password is ", is kept).
	group int
	// hints: the rule only runs where the lower-cased text holds one of them.
	hints []string
	// near, when set, is a cheap look at one hint occurrence (lower[i:j])
	// that says whether the rule could match around it. Long texts are then
	// only matched in windows around such occurrences: Go's regexp is linear
	// but slow, and an agent's 40 KB system prompt that mentions "API key"
	// and "password" everywhere is redacted on every turn.
	near func(text, lower string, i, j int) bool
	// before and after bound the window around a hint.
	before, after int
	// valid, when set, must accept the secret (rules that have no separator
	// to go by only take values that look like secrets).
	valid func(string) bool
	ids   []int // hintIDs of hints
}

// pwWords name a password; "pw" and "pwd" as people type them.
const pwWords = `password|passwd|passphrase|passcode|pass code|pin code|pwd|pw`

var pwHints = []string{"pass", "pwd", "pw", "pin code"}

var redactRules = []redactRule{
	{kind: "private_key", re: regexp.MustCompile(`-----BEGIN [A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----(?s:.*?)(?:-----END [A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----|\z)`), hints: []string{"-----begin"}},
	{kind: "api_key", re: regexp.MustCompile(`\bsk-(?:ant-|proj-|svcacct-|admin-|or-v1-)?[A-Za-z0-9_\-]{16,}`), hints: []string{"sk-"}, near: always, before: 8, after: 1024},
	{kind: "api_key", re: regexp.MustCompile(`\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{22,}|glpat-[A-Za-z0-9_\-]{20,}|hf_[A-Za-z0-9]{30,}|xox[abposr]-[A-Za-z0-9\-]{10,}|AIza[0-9A-Za-z_\-]{30,}|(?:sk|rk|pk)_(?:live|test)_[0-9A-Za-z]{16,}|npm_[A-Za-z0-9]{30,})`),
		hints: []string{"ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "glpat-", "hf_", "xox", "aiza", "_live_", "_test_", "npm_"}, near: always, before: 8, after: 1024},
	{kind: "aws_key", re: regexp.MustCompile(`\b(?:AKIA|ASIA|AGPA|AIDA|AROA)[0-9A-Z]{16}\b`), hints: []string{"akia", "asia", "agpa", "aida", "aroa"}, near: always, before: 8, after: 32},
	{kind: "token", re: regexp.MustCompile(`\beyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}`), hints: []string{"eyj"}, near: always, before: 8, after: 8192},
	{kind: "token", re: regexp.MustCompile(`(?i)\bbearer\s+([A-Za-z0-9._~+/\-]{12,}=*)`), group: 1, hints: []string{"bearer"}, near: wordAfter(12), before: 8, after: 4096},
	{kind: "credentials", re: regexp.MustCompile(`(?i)\b[a-z][a-z0-9+.\-]{1,15}://([^\s/:@]{1,128}:[^\s/@]{1,256})@`), group: 1, hints: []string{"://"}, near: atAfter, before: 24, after: 400},
	// "password is X", "password: X", "wifi password for the office: X", `"password": "X"`.
	{kind: "password", re: regexp.MustCompile(`(?i)\b(?:` + pwWords + `)\b["']?(?:\s+(?:for|of|to|on|at)\s+(?:[\w'-]+\s+){0,3}?[\w'-]+)?\s*(?:is|was|=|:|：|-)\s*["'“]?([^\s"'”,;]{3,})`), group: 1,
		hints: pwHints, near: separatorAfter(64), before: 8, after: 400},
	// "wifi pw BlueElephant42": no separator, so only a secret-looking value.
	{kind: "password", re: regexp.MustCompile(`(?i)\b(?:` + pwWords + `)\s+["'“]?([^\s"'”,;]{6,})`), group: 1, hints: pwHints, valid: secretLooking,
		near: secretAfter, before: 8, after: 400},
	// "BlueElephant42 is the wifi password".
	{kind: "password", re: regexp.MustCompile(`(?i)(?:^|[\s"'“(])([^\s"'”,;:()]{6,})\s+(?:is|was)\s+(?:the|my|our|your|his|her|their)\s+(?:[\w'-]+\s+){0,3}?(?:` + pwWords + `)\b`), group: 1,
		hints: pwHints, valid: secretLooking, near: isBefore, before: 400, after: 16},
	{kind: "secret", re: regexp.MustCompile(`(?i)\b(?:secret|api[_ \-]?key|apikey|access[_ \-]?key|secret[_ \-]?key|access[_ \-]?token|auth[_ \-]?token|refresh[_ \-]?token|session[_ \-]?token|token|private[_ \-]?key|client[_ \-]?secret)\b["']?\s*(?:is|was|=|:|：)\s*["'“]?([^\s"'”,;]{6,})`), group: 1,
		hints: []string{"secret", "key", "token"}, near: separatorAfter(16), before: 32, after: 400},
	{kind: "password", re: regexp.MustCompile(`(?:密码|口令|登录密码|支付密码)\s*(?:是|为|:|：|=)\s*["'“]?([^\s"'”，。,;；]{3,})`), group: 1, hints: []string{"密码", "口令"},
		near: separatorAfter(16), before: 16, after: 400},
	{kind: "secret", re: regexp.MustCompile(`(?i)(?:密钥|秘钥|令牌|token|api\s?key)\s*(?:是|为|:|：|=)\s*["'“]?([^\s"'”，。,;；]{6,})`), group: 1, hints: []string{"密钥", "秘钥", "令牌", "token", "api"},
		near: separatorAfter(24), before: 16, after: 400},
}

func always(string, string, int, int) bool { return true }

// separatorAfter: "is", "was", ":", "=" (or 是/为) within n bytes after the hint.
func separatorAfter(n int) func(string, string, int, int) bool {
	return func(_, lower string, _, j int) bool {
		w := lower[j:min(len(lower), j+n)]
		return strings.ContainsAny(w, ":=-：是为") || strings.Contains(w, " is ") || strings.Contains(w, " was ") || strings.Contains(w, "\tis ")
	}
}

// isBefore: "is" or "was" shortly before the hint ("X is the password").
func isBefore(_, lower string, i, _ int) bool {
	w := lower[max(0, i-80):i]
	return strings.Contains(w, " is ") || strings.Contains(w, " was ")
}

// wordAfter: a run of at least n non-space bytes follows the hint.
func wordAfter(n int) func(string, string, int, int) bool {
	return func(text, _ string, _, j int) bool {
		k := j
		for k < len(text) && isSpaceByte(text[k]) {
			k++
		}
		m := k
		for m < len(text) && !isSpaceByte(text[m]) {
			m++
		}
		return m-k >= n
	}
}

// secretAfter: the word after the hint looks like a secret.
func secretAfter(text, _ string, _, j int) bool {
	k := j
	for k < len(text) && (text[k] == ' ' || text[k] == '\t') {
		k++
	}
	if k == j {
		return false // "password." or "passwords": not "pw <value>"
	}
	for k < len(text) && strings.IndexByte(`"'`, text[k]) >= 0 {
		k++
	}
	m := k
	for m < len(text) && !isSpaceByte(text[m]) && text[m] != ',' && text[m] != ';' {
		m++
	}
	return m-k >= 6 && secretLooking(text[k:m])
}

// atAfter: an "@" before the next space (user:password@host).
func atAfter(text, _ string, _, j int) bool {
	for k := j; k < len(text) && k < j+400; k++ {
		switch text[k] {
		case '@':
			return true
		case ' ', '\n', '\t', '"':
			return false
		}
	}
	return false
}

// secretLooking accepts values that look generated or chosen as secrets: a
// digit next to letters, mixed case after the first letter, or a symbol;
// "reset" (as in "password reset") does not.
func secretLooking(v string) bool {
	var digit, letter, upperLater, lower, symbol bool
	for i, r := range v {
		switch {
		case r >= '0' && r <= '9':
			digit = true
		case unicode.IsUpper(r):
			letter = true
			upperLater = upperLater || i > 0
		case unicode.IsLower(r):
			letter, lower = true, true
		case strings.ContainsRune("!@#$%^&*+=?~_-./", r):
			symbol = true
		}
	}
	return digit && letter || upperLater && lower || symbol && letter
}

// cardRe finds runs of at least 13 digits, optionally grouped by spaces or
// dashes; redactCard looks for a card number among their groups.
var cardRe = regexp.MustCompile(`\d(?:[ \-]?\d){12,80}`)

// Redact replaces secrets in text and reports how many it replaced.
func Redact(text string) (string, int) {
	out, found := RedactCollect(text)
	return out, len(found)
}

// RedactCollect is Redact returning the secrets it replaced, so that other
// text (the assistant echoing a password back) can be scrubbed of them
// (ScrubValues).
func RedactCollect(text string) (string, []string) {
	if len(text) < 7 { // "pw: abc" is the shortest text a rule redacts
		return text, nil
	}
	var found []string
	idx := &hintIndex{}
	for i := range redactRules {
		r := &redactRules[i]
		idx.reset(text)
		if !idx.any(r) {
			continue
		}
		repl := RedactedPrefix + r.kind + "]"
		if r.near != nil && len(idx.lower) == len(text) {
			text = r.windowed(text, idx, repl, &found)
		} else {
			text = r.replaceAll(text, repl, &found)
		}
	}
	if hasDigitRun(text, 13) && cardRe.MatchString(text) {
		text = cardRe.ReplaceAllStringFunc(text, func(m string) string {
			out, k := redactCard(m)
			if k > 0 {
				found = append(found, m)
			}
			return out
		})
	}
	return text, found
}

// ScrubValues replaces every occurrence of the given secrets (as found by
// RedactCollect elsewhere) in text; values shorter than 6 bytes are left,
// they would match ordinary words.
func ScrubValues(text string, values []string) string {
	for _, v := range values {
		if len(v) >= 6 && strings.Contains(text, v) {
			text = strings.ReplaceAll(text, v, RedactedPrefix+"secret]")
		}
	}
	return text
}

// windowed applies the rule to the windows around the hints of text that
// pass its near check.
func (r *redactRule) windowed(text string, idx *hintIndex, repl string, found *[]string) string {
	lower := idx.lower
	var spans [][2]int
	for k, h := range r.hints {
		for _, i := range idx.positions(r.ids[k], h) {
			j := i + len(h)
			if !r.near(text, lower, i, j) {
				continue
			}
			// Start just after a space, so \b and (?:^|\s) mean what they mean in the text.
			a := max(0, i-r.before)
			for a > 0 && !isSpaceByte(text[a-1]) && i-a < r.before+64 {
				a--
			}
			spans = append(spans, [2]int{a, min(len(text), j+r.after)})
		}
	}
	if len(spans) == 0 {
		return text
	}
	sort.Slice(spans, func(x, y int) bool { return spans[x][0] < spans[y][0] })
	var out strings.Builder
	last, end := 0, -1
	flush := func(a, b int) {
		for a < len(text) && !utf8.RuneStart(text[a]) {
			a++
		}
		for b < len(text) && !utf8.RuneStart(text[b]) {
			b++
		}
		if b <= a {
			return
		}
		out.WriteString(text[last:a])
		out.WriteString(r.replaceAll(text[a:b], repl, found))
		last = b
	}
	start := 0
	for _, sp := range spans {
		if sp[0] <= end {
			end = max(end, sp[1])
			continue
		}
		if end >= 0 {
			flush(start, end)
		}
		start, end = max(sp[0], last), sp[1]
	}
	flush(start, end)
	out.WriteString(text[last:])
	return out.String()
}

// replaceAll replaces the rule's secret group in every match of text.
func (r *redactRule) replaceAll(text, repl string, found *[]string) string {
	var b strings.Builder
	last := 0
	for _, loc := range r.re.FindAllStringSubmatchIndex(text, -1) {
		s, e := loc[2*r.group], loc[2*r.group+1]
		if s < 0 || s < last || strings.HasPrefix(text[s:], RedactedPrefix) || r.valid != nil && !r.valid(text[s:e]) {
			continue
		}
		b.WriteString(text[last:s])
		b.WriteString(repl)
		*found = append(*found, text[s:e])
		last = e
	}
	if last == 0 {
		return text
	}
	b.WriteString(text[last:])
	return b.String()
}

func isSpaceByte(c byte) bool {
	return c == ' ' || c == '\n' || c == '\t' || c == '\r' || c == '"' || c == '\''
}

// hintIndex finds the hints in one text once: several rules share them
// ("pass" for three password rules), and the text rarely changes between
// rules (only when one found a secret).
type hintIndex struct {
	text, lower string
	pos         [][]int // by hintID
	done        []bool
}

// hintIDs numbers every distinct hint of every rule; each rule's ids are
// filled in once (redactRule.ids).
var hintIDs = func() map[string]int {
	ids := map[string]int{}
	for i := range redactRules {
		r := &redactRules[i]
		for _, h := range r.hints {
			if _, ok := ids[h]; !ok {
				ids[h] = len(ids)
			}
			r.ids = append(r.ids, ids[h])
		}
	}
	return ids
}()

func (x *hintIndex) reset(text string) {
	if x.done != nil && text == x.text {
		return
	}
	x.text, x.lower = text, strings.ToLower(text)
	if x.done == nil {
		x.pos, x.done = make([][]int, len(hintIDs)), make([]bool, len(hintIDs))
		return
	}
	clear(x.done)
}

// positions lists where hint h (hintIDs[h] == id) occurs in the lower-cased text.
func (x *hintIndex) positions(id int, h string) []int {
	if x.done[id] {
		return x.pos[id]
	}
	p := x.pos[id][:0]
	for from := 0; ; {
		i := strings.Index(x.lower[from:], h)
		if i < 0 {
			break
		}
		p = append(p, from+i)
		from += i + len(h)
	}
	x.pos[id], x.done[id] = p, true
	return p
}

func (x *hintIndex) any(r *redactRule) bool {
	if len(r.hints) == 0 {
		return true
	}
	for i, h := range r.hints {
		if len(x.positions(r.ids[i], h)) > 0 {
			return true
		}
	}
	return false
}

// hasDigitRun reports whether text has n digits with at most single spaces
// or dashes between them (the shape cardRe looks for).
func hasDigitRun(text string, n int) bool {
	run := 0
	sep := false
	for i := 0; i < len(text); i++ {
		c := text[i]
		switch {
		case c >= '0' && c <= '9':
			run++
			sep = false
			if run >= n {
				return true
			}
		case (c == ' ' || c == '-') && run > 0 && !sep:
			sep = true
		default:
			run, sep = 0, false
		}
	}
	return false
}

// redactCard finds, within a run of digit groups, the longest run of whole
// groups that is a card number (13–19 digits passing Luhn): a card may sit
// next to other numbers ("4111 1111 1111 1111 0").
func redactCard(m string) (string, int) {
	if luhn(m) {
		return RedactedPrefix + "card]", 1
	}
	// Group boundaries: [start, end) byte offsets of each digit group.
	var groups [][2]int
	start := -1
	for i := 0; i <= len(m); i++ {
		digit := i < len(m) && m[i] >= '0' && m[i] <= '9'
		if digit && start < 0 {
			start = i
		}
		if !digit && start >= 0 {
			groups = append(groups, [2]int{start, i})
			start = -1
		}
	}
	if len(groups) < 2 || len(groups) > 24 {
		return m, 0 // one long number is not a card
	}
	for size := len(groups) - 1; size >= 1; size-- {
		for i := 0; i+size <= len(groups); i++ {
			a, b := groups[i][0], groups[i+size-1][1]
			if luhn(m[a:b]) {
				rest, k := redactCard(m[b:])
				return m[:a] + RedactedPrefix + "card]" + rest, k + 1
			}
		}
	}
	return m, 0
}

// luhn reports whether the digits of s (separators ignored) are 13–19 long
// and pass the Luhn checksum.
func luhn(s string) bool {
	var digits []int
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= '0' && c <= '9' {
			digits = append(digits, int(c-'0'))
		}
	}
	if len(digits) < 13 || len(digits) > 19 {
		return false
	}
	allSame := true
	for _, d := range digits {
		if d != digits[0] {
			allSame = false
			break
		}
	}
	if allSame {
		return false
	}
	sum := 0
	for i := len(digits) - 1; i >= 0; i-- {
		d := digits[i]
		if (len(digits)-1-i)%2 == 1 {
			d *= 2
			if d > 9 {
				d -= 9
			}
		}
		sum += d
	}
	return sum%10 == 0
}
