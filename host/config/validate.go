package config

import (
	"fmt"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// location is where a key's value came from, for messages.
type location struct {
	file string
	line int
	env  string
}

func (l location) String() string {
	switch {
	case l.env != "":
		return "env " + l.env
	case l.file != "" && l.line > 0:
		return l.file + ":" + strconv.Itoa(l.line)
	}
	return l.file
}

func (c *Config) fieldErr(key, msg string) *Error {
	l := c.loc[key]
	return &Error{File: l.file, Line: l.line, Env: l.env, Key: key, Msg: msg}
}

// Validate checks every value against the schema (enums, ranges, URLs,
// HH:MM times) and the cross-key rules, and returns all problems joined.
func (c *Config) Validate() error {
	var errs errList
	for _, f := range schema().leaves {
		v := getField(c, f)
		bad := func(format string, a ...any) { errs.add(c.fieldErr(f.path, fmt.Sprintf(format, a...))) }
		switch f.kind {
		case kString:
			s := v.String()
			if !f.allowed(s) {
				bad("must be one of %s; got %q", strings.Join(f.enum, ", "), s)
			}
			switch f.check {
			case "url":
				if s != "" && !validURL(s) {
					bad("must be an http(s) URL such as https://api.example.com/v1; got %q", s)
				}
			case "hhmm":
				if !validHHMM(s) {
					bad("must be a time of day as HH:MM (00:00 to 23:59), e.g. \"23:00\"; got %q", s)
				}
			case "tz":
				if s != "" && !strings.EqualFold(s, "local") {
					if _, err := time.LoadLocation(s); err != nil {
						bad("must be an IANA time zone such as Europe/Berlin or America/New_York (empty = the system's); got %q", s)
					}
				}
			case "host":
				if strings.TrimSpace(s) == "" || strings.ContainsAny(s, " /") {
					bad("must be a host name or IP address such as 127.0.0.1; got %q", s)
				}
			}
		case kInt, kFloat:
			x := float64(0)
			if f.kind == kInt {
				x = float64(v.Int())
			} else {
				x = v.Float()
			}
			if math.IsNaN(x) || math.IsInf(x, 0) {
				bad("must be a finite number")
				continue
			}
			tooLow := f.min != nil && (x < *f.min || (f.minExcl && x == *f.min))
			tooHigh := f.max != nil && x > *f.max
			if tooLow || tooHigh {
				bad("must be %s; got %s", rangeText(f), formatValue(f, v))
			}
		}
	}
	if p := c.Runtime.GCPercent; p <= 0 {
		errs.add(c.fieldErr("runtime.gc_percent", gcPercentProblem(p)))
	}
	if r := c.RL.LoRARank; r > 0 && r&(r-1) != 0 {
		errs.add(c.fieldErr("rl.lora_rank", fmt.Sprintf("must be a power of two (8, 16, 32, 64, …); got %d. Fix: `metaclaw config set rl.lora_rank 32`", r)))
	}
	if c.RL.Backend == "plugin" && strings.TrimSpace(c.Plugins.Trainer) == "" {
		errs.add(c.fieldErr("rl.backend", "is plugin, but `plugins.trainer` is empty. Fix: name the trainer plugin with `metaclaw config set plugins.trainer <name-or-path>`, or pick a built-in backend (tinker, mint, weaver)"))
	}
	if c.RL.Backend == "weaver" && (c.RL.LossFn == "ppo" || c.RL.LossFn == "cispo") {
		errs.add(c.fieldErr("rl.loss_fn", fmt.Sprintf("is %s, which Weaver does not offer. Fix: `metaclaw config set rl.loss_fn importance_sampling` (or truncated_importance_sampling)", c.RL.LossFn)))
	}
	if c.OPD.Enabled && (strings.TrimSpace(c.OPD.TeacherURL) == "" || strings.TrimSpace(c.OPD.TeacherModel) == "") {
		errs.add(c.fieldErr("opd.enabled", "is true, but the teacher is not set. Fix: `metaclaw config set opd.teacher_url <OpenAI-compatible base URL>` and `metaclaw config set opd.teacher_model <model>` (a model with the policy's tokenizer), or `metaclaw config set opd.enabled false`"))
	}
	if msg := tokenizerDirProblem(c.RL.TokenizerPath); msg != "" {
		errs.add(c.fieldErr("rl.tokenizer_path", msg))
	}
	if !isLoopback(c.Proxy.Host) && c.Proxy.Auth == "none" {
		errs.add(c.fieldErr("proxy.auth", fmt.Sprintf("is none, but `proxy.host` %q is not a loopback address: anyone who can reach this port could use it. Fix: `metaclaw config set proxy.auth key`, or listen locally with `metaclaw config set proxy.host 127.0.0.1`", c.Proxy.Host)))
	}
	if !isLoopback(c.Proxy.Host) && c.Proxy.APIKey == "" {
		errs.add(c.fieldErr("proxy.host", fmt.Sprintf("is %q, which is not a loopback address, but `proxy.api_key` is empty: anyone who can reach this port could spend your LLM credits. Fix: set a key with `metaclaw config set proxy.api_key <long-random-secret>` (clients send it as a Bearer token), or listen locally with `metaclaw config set proxy.host 127.0.0.1`", c.Proxy.Host)))
	}
	return errs.err()
}

// gcPercentProblem explains a runtime.gc_percent at or below 0, which Go
// would read as "collect all the time" (0) or "never collect" (below 0).
func gcPercentProblem(p int) string {
	fix := "Fix: `metaclaw config set runtime.gc_percent 200` (the default; 100 = Go's own)"
	if p == 0 {
		return "is 0, which would make the garbage collector run without pause. " + fix
	}
	return fmt.Sprintf("is %d, which would turn the garbage collector off: the host's heap would grow with every request until the system stops it. %s; to run without a collector anyway, start the host with GOGC=off (and a GOMEMLIMIT) in its environment", p, fix)
}

func rangeText(f *field) string {
	num := func(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }
	switch {
	case f.min != nil && f.max != nil:
		return "between " + num(*f.min) + " and " + num(*f.max)
	case f.min != nil && f.minExcl:
		return "greater than " + num(*f.min)
	case f.min != nil:
		return "at least " + num(*f.min)
	case f.max != nil:
		return "at most " + num(*f.max)
	}
	return "in range"
}

func validURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}

// validHHMM accepts 24-hour "H:MM" or "HH:MM".
func validHHMM(s string) bool {
	h, m, ok := strings.Cut(s, ":")
	if !ok || len(h) < 1 || len(h) > 2 || len(m) != 2 {
		return false
	}
	hh, err1 := strconv.Atoi(h)
	mm, err2 := strconv.Atoi(m)
	return err1 == nil && err2 == nil && hh >= 0 && hh <= 23 && mm >= 0 && mm <= 59 && h[0] != '+' && h[0] != '-' && m[0] != '+' && m[0] != '-'
}

// tokenizerDirProblem checks that rl.tokenizer_path, when set, is a
// directory holding the tokenizer files RL serving loads.
func tokenizerDirProblem(dir string) string {
	if dir == "" {
		return ""
	}
	fix := fmt.Sprintf("Fix: run `metaclaw rl fetch-tokenizer --dir %s`, point it at a Hugging Face model directory, or unset it (`metaclaw config set rl.tokenizer_path \"\"`) to use the fetch-tokenizer cache", dir)
	st, err := os.Stat(dir)
	switch {
	case err != nil:
		return fmt.Sprintf("is %q, which does not exist. %s", dir, fix)
	case !st.IsDir():
		return fmt.Sprintf("is %q, which is not a directory. %s", dir, fix)
	}
	for _, name := range []string{"tokenizer.json", "tokenizer_config.json"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			return fmt.Sprintf("is %q, which has no %s. %s", dir, name, fix)
		}
	}
	return ""
}
