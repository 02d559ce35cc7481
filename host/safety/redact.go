package safety

import (
	"regexp"
	"strings"
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
}

var redactRules = []redactRule{
	{kind: "private_key", re: regexp.MustCompile(`-----BEGIN [A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----(?s:.*?)(?:-----END [A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----|\z)`)},
	{kind: "api_key", re: regexp.MustCompile(`\bsk-(?:ant-|proj-|svcacct-|admin-|or-v1-)?[A-Za-z0-9_\-]{16,}`)},
	{kind: "api_key", re: regexp.MustCompile(`\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{22,}|glpat-[A-Za-z0-9_\-]{20,}|hf_[A-Za-z0-9]{30,}|xox[abposr]-[A-Za-z0-9\-]{10,}|AIza[0-9A-Za-z_\-]{30,}|(?:sk|rk|pk)_(?:live|test)_[0-9A-Za-z]{16,}|npm_[A-Za-z0-9]{30,})`)},
	{kind: "aws_key", re: regexp.MustCompile(`\b(?:AKIA|ASIA|AGPA|AIDA|AROA)[0-9A-Z]{16}\b`)},
	{kind: "token", re: regexp.MustCompile(`\beyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}`)},
	{kind: "token", re: regexp.MustCompile(`(?i)\bbearer\s+([A-Za-z0-9._~+/\-]{12,}=*)`), group: 1},
	{kind: "credentials", re: regexp.MustCompile(`(?i)\b[a-z][a-z0-9+.\-]{1,15}://([^\s/:@]{1,128}:[^\s/@]{1,256})@`), group: 1},
	{kind: "password", re: regexp.MustCompile(`(?i)\b(?:password|passwd|pwd|passphrase|pass code|passcode|pin code)\b\s*(?:is|was|=|:|：|-)\s*["'“]?([^\s"'”,;]{3,})`), group: 1},
	{kind: "secret", re: regexp.MustCompile(`(?i)\b(?:secret|api[_ \-]?key|apikey|access[_ \-]?key|secret[_ \-]?key|access[_ \-]?token|auth[_ \-]?token|refresh[_ \-]?token|session[_ \-]?token|token|private[_ \-]?key|client[_ \-]?secret)\b\s*(?:is|was|=|:|：)\s*["'“]?([^\s"'”,;]{6,})`), group: 1},
	{kind: "password", re: regexp.MustCompile(`(?:密码|口令|登录密码|支付密码)\s*(?:是|为|:|：|=)\s*["'“]?([^\s"'”，。,;；]{3,})`), group: 1},
	{kind: "secret", re: regexp.MustCompile(`(?i)(?:密钥|秘钥|令牌|token|api\s?key)\s*(?:是|为|:|：|=)\s*["'“]?([^\s"'”，。,;；]{6,})`), group: 1},
}

// cardRe finds runs of at least 13 digits, optionally grouped by spaces or
// dashes; redactCard looks for a card number among their groups.
var cardRe = regexp.MustCompile(`\d(?:[ \-]?\d){12,80}`)

// Redact replaces secrets in text and reports how many it replaced.
func Redact(text string) (string, int) {
	if text == "" {
		return text, 0
	}
	n := 0
	for _, r := range redactRules {
		if !r.re.MatchString(text) {
			continue
		}
		repl := RedactedPrefix + r.kind + "]"
		if r.group == 0 {
			text = r.re.ReplaceAllStringFunc(text, func(m string) string {
				if strings.HasPrefix(m, RedactedPrefix) {
					return m
				}
				n++
				return repl
			})
			continue
		}
		var b strings.Builder
		last := 0
		for _, loc := range r.re.FindAllStringSubmatchIndex(text, -1) {
			s, e := loc[2*r.group], loc[2*r.group+1]
			if s < 0 || strings.HasPrefix(text[s:], RedactedPrefix) {
				continue
			}
			b.WriteString(text[last:s])
			b.WriteString(repl)
			last = e
			n++
		}
		if last > 0 {
			b.WriteString(text[last:])
			text = b.String()
		}
	}
	if cardRe.MatchString(text) {
		text = cardRe.ReplaceAllStringFunc(text, func(m string) string {
			out, k := redactCard(m)
			n += k
			return out
		})
	}
	return text, n
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
