package edit

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"

	"github.com/metaclaw-go/metaclaw/internal/textclip"
)

// Env edits a dotenv file line by line: an assignment is changed in place
// (keeping `export `, the key and an inline comment), a new one is appended.
// Comments, blank lines and order stay as they were.
type Env struct {
	lines []string // split after '\n'
	want  map[string]string
	orig  map[string]string
	crlf  bool
}

var envKey = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.]*$`)

var envLine = regexp.MustCompile(`^(\s*(?:export\s+)?)([A-Za-z_][A-Za-z0-9_.]*)(\s*=\s*)(.*?)(\r?\n?)$`)

// ParseEnv parses dotenv text. Lines that are neither assignments,
// comments nor blank are kept as they are.
func ParseEnv(src []byte) (*Env, error) {
	e := &Env{lines: strings.SplitAfter(string(src), "\n"), crlf: bytes.Contains(src, []byte("\r\n"))}
	if len(e.lines) > 0 && e.lines[len(e.lines)-1] == "" {
		e.lines = e.lines[:len(e.lines)-1]
	}
	vals, err := parseEnvValues(e.lines)
	if err != nil {
		return nil, err
	}
	e.orig = vals
	e.want = map[string]string{}
	for k, v := range vals {
		e.want[k] = v
	}
	return e, nil
}

func parseEnvValues(lines []string) (map[string]string, error) {
	vals := map[string]string{}
	for i, l := range lines {
		m := envLine.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		v, _, err := envValue(m[4])
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", i+1, err)
		}
		vals[m[2]] = v
	}
	return vals, nil
}

// envValue decodes a raw value; it returns the value and the length of the
// raw value part (without a trailing comment).
func envValue(raw string) (string, int, error) {
	if raw == "" {
		return "", 0, nil
	}
	switch raw[0] {
	case '"', '\'':
		q := raw[0]
		var b strings.Builder
		for i := 1; i < len(raw); i++ {
			c := raw[i]
			if c == '\\' && q == '"' && i+1 < len(raw) {
				i++
				switch raw[i] {
				case 'n':
					b.WriteByte('\n')
				case 't':
					b.WriteByte('\t')
				case 'r':
					b.WriteByte('\r')
				default:
					b.WriteByte(raw[i])
				}
				continue
			}
			if c == q {
				return b.String(), i + 1, nil
			}
			b.WriteByte(c)
		}
		return "", 0, fmt.Errorf("unterminated quote in %q", textclip.Ellipsis(raw, 40))
	}
	v := raw
	n := len(raw)
	if i := strings.Index(raw, " #"); i >= 0 {
		n = i
	} else if i := strings.Index(raw, "\t#"); i >= 0 {
		n = i
	}
	v = strings.TrimRight(raw[:n], " \t")
	return v, len(v), nil
}

// Get returns the value of the last assignment of key.
func (e *Env) Get(key string) (string, bool) {
	v, ok := e.want[key]
	return v, ok
}

// Bytes is the current text.
func (e *Env) Bytes() []byte { return []byte(strings.Join(e.lines, "")) }

func quoteEnv(v string) string {
	if v != "" && !strings.ContainsAny(v, " \t#\"'\\$`\n\r=") {
		return v
	}
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`, "\r", `\r`, "$", `\$`, "`", "\\`")
	return `"` + r.Replace(v) + `"`
}

// Set assigns key=value: the last existing assignment is changed, or a new
// line is appended.
func (e *Env) Set(key, value string) error {
	if !envKey.MatchString(key) {
		return fmt.Errorf("bad variable name %q", key)
	}
	if err := checkValue(value); err != nil {
		return err
	}
	for i := len(e.lines) - 1; i >= 0; i-- {
		m := envLine.FindStringSubmatch(e.lines[i])
		if m == nil || m[2] != key {
			continue
		}
		cur, n, err := envValue(m[4])
		if err != nil {
			return err
		}
		if cur == value {
			e.want[key] = value
			return nil
		}
		e.lines[i] = m[1] + m[2] + m[3] + quoteEnv(value) + m[4][n:] + m[5]
		e.want[key] = value
		return nil
	}
	nl := "\n"
	if e.crlf {
		nl = "\r\n"
	}
	if n := len(e.lines); n > 0 && !strings.HasSuffix(e.lines[n-1], "\n") {
		e.lines[n-1] += nl
	}
	e.lines = append(e.lines, key+"="+quoteEnv(value)+nl)
	e.want[key] = value
	return nil
}

// Verify re-parses the text and checks that exactly the intended values changed.
func (e *Env) Verify() error {
	got, err := parseEnvValues(strings.SplitAfter(string(e.Bytes()), "\n"))
	if err != nil {
		return fmt.Errorf("env edit verification failed: %w", err)
	}
	if Canon(toAny(got)) != Canon(toAny(e.want)) {
		return mismatch("env", toAny(got), toAny(e.want))
	}
	return nil
}

func toAny(m map[string]string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
