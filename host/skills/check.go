package skills

import (
	"fmt"
	"net"
	"net/url"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Limits on what the evolver may write into a skill.
const (
	MaxProposalBodyChars   = 6000
	MinProposalBodyChars   = 80
	MaxProposalBodyTokens  = 1200
	MinDescriptionChars    = 20
	MaxProposalTags        = 12
	MaxProposalTagChars    = 40
	MaxProposalRationale   = 600
	MaxProposalCategoryLen = 32
)

// AllowedDocHosts are the only hosts an evolved skill may link to: well-known
// documentation sites (and their subdomains). Everything else is rejected:
// a skill is injected into every future prompt, so a link is an invitation
// for the agent to fetch it.
var AllowedDocHosts = []string{
	"docs.python.org", "peps.python.org", "go.dev", "pkg.go.dev", "doc.rust-lang.org", "docs.rs",
	"developer.mozilla.org", "nodejs.org", "typescriptlang.org", "docs.github.com", "git-scm.com",
	"man7.org", "sqlite.org", "postgresql.org", "dev.mysql.com", "kubernetes.io", "docs.docker.com",
	"owasp.org", "cheatsheetseries.owasp.org", "learn.microsoft.com", "datatracker.ietf.org",
	"rfc-editor.org", "www.rfc-editor.org", "json-schema.org", "semver.org", "pandas.pydata.org",
	"numpy.org", "docs.pytest.org", "jestjs.io", "react.dev",
}

// Finding is one reason a proposal was rejected.
type Finding struct {
	Rule   string `json:"rule"`
	Detail string `json:"detail"`
}

func (f Finding) String() string { return f.Rule + ": " + f.Detail }

var secretPatterns = []struct {
	name string
	re   *regexp.Regexp
}{
	{"private key", regexp.MustCompile(`-----BEGIN [A-Z ]*PRIVATE KEY-----`)},
	{"OpenAI/Anthropic-style API key", regexp.MustCompile(`\bsk-(?:ant-|proj-|live-)?[A-Za-z0-9_-]{20,}`)},
	{"AWS access key id", regexp.MustCompile(`\b(?:AKIA|ASIA)[0-9A-Z]{16}\b`)},
	{"GitHub token", regexp.MustCompile(`\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{30,}|\bgithub_pat_[A-Za-z0-9_]{40,}`)},
	{"Slack token", regexp.MustCompile(`\bxox[abposr]-[A-Za-z0-9-]{10,}`)},
	{"Google API key", regexp.MustCompile(`\bAIza[0-9A-Za-z_-]{35}\b`)},
	{"Stripe key", regexp.MustCompile(`\b[rs]k_(?:live|test)_[A-Za-z0-9]{16,}`)},
	{"JSON web token", regexp.MustCompile(`\beyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}`)},
	{"credentials in a URL", regexp.MustCompile(`[a-zA-Z][a-zA-Z0-9+.-]*://[^\s/:@]+:[^\s/@]{3,}@`)},
	{"bearer token", regexp.MustCompile(`(?i)\bbearer\s+[A-Za-z0-9._~+/=-]{24,}`)},
}

// assignment of a secret-looking key to a literal value: password = "hunter22".
var secretAssign = regexp.MustCompile(`(?i)\b(password|passwd|pwd|secret|api[_-]?key|access[_-]?key|auth[_-]?token|token|client[_-]?secret)\b["']?\s*[:=]\s*["']?([^\s"'<>{}()\[\],;]{6,})`)

// placeholder values that are fine in examples.
var placeholder = regexp.MustCompile(`(?i)^(\$\{?[A-Z_][A-Z0-9_]*\}?|\$\(.*|x{3,}|\*{3,}|\.{3,}|your[-_a-z]*|my[-_a-z]*|changeme|example[-_a-z]*|redacted|placeholder|dummy|test|secret|token|password|env|os\.environ.*|process\.env.*|getenv.*|none|null|true|false)$`)

// injectionPatterns catch text that tries to steer the agent against its
// user: overriding instructions, hiding things, exfiltrating data, turning
// off safety.
var injectionPatterns = []struct {
	rule string
	re   *regexp.Regexp
}{
	{"overrides instructions", regexp.MustCompile(`(?i)\b(ignore|disregard|forget|override|bypass)\b[^.\n]{0,40}\b(previous|prior|above|earlier|all|any|the|your|system|developer|user'?s?)\b[^.\n]{0,20}\b(instructions?|prompts?|rules|guidelines|messages|directions|requests?)\b`)},
	{"overrides instructions", regexp.MustCompile(`(?i)\b(ignore|disregard|override)\s+(the\s+)?user\b`)},
	{"overrides instructions", regexp.MustCompile(`(?i)\b(new|updated|real)\s+system\s+prompt\b|\byou\s+are\s+now\s+(in\s+)?(dan|developer mode|jailbroken|unrestricted)|\bjailbreak`)},
	{"deceives the user", regexp.MustCompile(`(?i)\b(do\s*n[o']t|never|without)\s+(tell|telling|inform|informing|notify|notifying|asking|ask)(ing)?\s+(the\s+)?user\b|\b(hide|conceal)\s+(this|it|that)\s+from\s+(the\s+)?user`)},
	{"exfiltrates data", regexp.MustCompile(`(?i)\bexfiltrat`)},
	{"exfiltrates data", regexp.MustCompile(`(?i)\b(send|upload|post|forward|email|transmit|copy|leak)\b[^\n]{0,80}?\b(credentials?|secrets?|api[ _-]?keys?|tokens?|passwords?|private keys?|ssh keys?|\.env|env(ironment)? vars?|conversation|chat history|inbox|cookies|session)\b[^\n]{0,40}?\b(to|at)\s+(https?://|[a-z0-9-]+\.[a-z]{2,}|\S+@)`)},
	{"disables safety", regexp.MustCompile(`(?i)\b(disable|turn\s+off|bypass|skip|deactivate|circumvent|remove)\b[^.\n]{0,30}\b(safety|sandbox(ing)?|guardrails?|security (checks?|settings?)|approvals?|confirmations?|permission (checks?|prompts?)|content filters?)\b`)},
	{"disables safety", regexp.MustCompile(`(?i)--dangerously-skip-permissions|--no-sandbox|--yolo\b|dangerouslyDisableSandbox|sandbox_mode\s*=\s*"?danger|--disable-web-security`)},
	{"runs remote code", regexp.MustCompile(`(?i)\b(curl|wget)\b[^|\n]{0,200}\|\s*(sudo\s+)?(ba|z)?sh\b`)},
	{"destroys data", regexp.MustCompile(`(?i)\brm\s+-[a-z]*r[a-z]*f?[a-z]*\s+(--no-preserve-root\s+)?(/|~|\$HOME)(\s|$)|\bmkfs\.|:\(\)\s*\{\s*:\|:&\s*\};:`)},
	{"impersonates the context markers", regexp.MustCompile(`(?i)</?metaclaw_context>|<<<(BEGIN|END)_[A-Z_]*INTERNAL_CONTEXT>>>`)},
}

var (
	urlRe      = regexp.MustCompile(`(?i)\b(?:https?|ftp|wss?|file|ssh|git|s3|gs)://[^\s)>\]"'` + "`" + `]+`)
	wwwRe      = regexp.MustCompile(`(?i)\bwww\.[a-z0-9-]+(\.[a-z0-9-]+)+`)
	ipRe       = regexp.MustCompile(`\b(?:\d{1,3}\.){3}\d{1,3}\b`)
	netCmdHost = regexp.MustCompile(`(?i)\b(?:curl|wget|nc|ncat|netcat|scp|rsync|ssh|telnet|ftp)\b[^\n|;&]*?\s((?:[a-z0-9-]+\.)+[a-z]{2,})(?::\d+)?(?:[/\s]|$)`)
	base64Blob = regexp.MustCompile(`[A-Za-z0-9+/]{160,}={0,2}`)
)

// hostAllowed reports whether a host is an allowed docs host or a subdomain of one.
func hostAllowed(h string) bool {
	h = strings.ToLower(strings.TrimSuffix(h, "."))
	for _, a := range AllowedDocHosts {
		if h == a || strings.HasSuffix(h, "."+a) {
			return true
		}
	}
	return false
}

// CheckText scans text that would be injected into prompts and returns why
// it must not be (nil when it is clean).
func CheckText(text string) []Finding {
	var out []Finding
	add := func(rule, detail string) {
		for _, f := range out {
			if f.Rule == rule {
				return
			}
		}
		out = append(out, Finding{Rule: rule, Detail: detail})
	}
	if !utf8.ValidString(text) {
		add("invalid text", "not valid UTF-8")
		return out
	}
	for _, r := range text {
		switch {
		case r == '\u200b' || r == '\u200c' || r == '\u200d' || r == '\u2060' || r == '\ufeff' || (r >= '\u202a' && r <= '\u202e') || (r >= '\u2066' && r <= '\u2069') || (r >= 0xE0000 && r <= 0xE007F):
			add("hidden characters", fmt.Sprintf("invisible or bidi control character U+%04X", r))
		case unicode.IsControl(r) && r != '\n' && r != '\t' && r != '\r':
			add("hidden characters", fmt.Sprintf("control character U+%04X", r))
		}
	}
	for _, p := range secretPatterns {
		if p.re.MatchString(text) {
			add("contains a secret", p.name)
		}
	}
	for _, m := range secretAssign.FindAllStringSubmatch(text, -1) {
		if !placeholder.MatchString(m[2]) {
			add("contains a secret", fmt.Sprintf("%s assigned a literal value", strings.ToLower(m[1])))
		}
	}
	for _, p := range injectionPatterns {
		if m := p.re.FindString(text); m != "" {
			add(p.rule, fmt.Sprintf("%q", clip(m, 80)))
		}
	}
	for _, raw := range urlRe.FindAllString(text, -1) {
		u, err := url.Parse(strings.TrimRight(raw, ".,;:!?"))
		if err != nil || u.Hostname() == "" || !hostAllowed(u.Hostname()) || (u.Scheme != "https" && u.Scheme != "http") {
			add("links to an unknown host", clip(raw, 80))
		}
	}
	for _, h := range wwwRe.FindAllString(text, -1) {
		if !hostAllowed(h) {
			add("links to an unknown host", h)
		}
	}
	for _, ip := range ipRe.FindAllString(text, -1) {
		if parsed := net.ParseIP(ip); parsed != nil && !parsed.IsLoopback() && !parsed.IsUnspecified() && !parsed.IsPrivate() {
			add("links to an unknown host", "IP address "+ip)
		}
	}
	for _, m := range netCmdHost.FindAllStringSubmatch(text, -1) {
		h := m[1]
		if !hostAllowed(h) && !strings.HasSuffix(h, ".example") && !strings.HasSuffix(h, ".local") && h != "example.com" && !strings.HasSuffix(h, ".example.com") && !looksLikeFile(h) {
			add("links to an unknown host", "network command to "+h)
		}
	}
	if m := base64Blob.FindString(text); m != "" {
		add("encoded payload", fmt.Sprintf("a %d-character base64-like blob", len(m)))
	}
	return out
}

// looksLikeFile tells "config.yaml" or "main.go" from a host name.
func looksLikeFile(h string) bool {
	i := strings.LastIndexByte(h, '.')
	if i < 0 {
		return false
	}
	switch h[i+1:] {
	case "go", "py", "js", "ts", "md", "sh", "rs", "rb", "pl", "txt", "log", "json", "yaml", "yml", "toml", "csv", "sql", "db", "pem", "key", "tar", "gz", "zip", "conf", "cfg", "ini", "env", "html", "css", "lock", "mod", "sum":
		return true
	}
	return false
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return truncate(s, n)
}
