package config

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// File names inside $METACLAW_HOME.
const (
	ConfigFile  = "config.yaml"
	SecretsFile = "secrets.yaml"
)

// Home returns the state dir: $METACLAW_HOME (leading `~` expanded, made
// absolute) or ~/.metaclaw.
func Home() (string, error) {
	if h := os.Getenv("METACLAW_HOME"); h != "" {
		p, err := filepath.Abs(expandTilde(h))
		if err != nil {
			return "", wrapf(err, "resolve METACLAW_HOME %q", h)
		}
		return p, nil
	}
	u, err := os.UserHomeDir()
	if err != nil {
		return "", wrapf(err, "find the home directory for ~/.metaclaw (set METACLAW_HOME)")
	}
	return filepath.Join(u, ".metaclaw"), nil
}

// expandTilde replaces a leading "~" or "~/" with the user's home dir.
func expandTilde(p string) string {
	if p != "~" && !strings.HasPrefix(p, "~/") && !strings.HasPrefix(p, `~\`) {
		return p
	}
	u, err := os.UserHomeDir()
	if err != nil {
		return p
	}
	return filepath.Join(u, p[1:])
}

// Default returns the built-in defaults for state dir home (empty: Home()).
func Default(home string) *Config {
	if home == "" {
		if h, err := Home(); err == nil {
			home = h
		}
	}
	c := base(home)
	c.finalize(noEnv, true)
	return c
}

// base fills every key from its default tag, leaving derived keys empty.
func base(home string) *Config {
	c := &Config{Home: home, Sources: map[string]string{}, loc: map[string]location{}}
	for _, f := range schema().leaves {
		def := f.def
		if strings.HasPrefix(def, "$METACLAW_HOME") {
			def = filepath.Join(home, filepath.FromSlash(strings.TrimPrefix(def, "$METACLAW_HOME")))
		}
		v, err := parseValue(f, def)
		if err != nil {
			panic(fmt.Sprintf("config: bad default for %s: %v", f.path, err)) // caught by tests
		}
		setField(c, f, v)
	}
	return c
}

func noEnv(string) (string, bool) { return "", false }

// Load reads $home/config.yaml (a missing file means defaults) and
// $home/secrets.yaml, applies METACLAW_* environment overrides and the
// OPENAI_*/ANTHROPIC_* upstream fallback, and validates the result. An empty
// home means Home(). On error the config is nil and the error lists every
// problem found (errors.Join of *Error). Non-fatal findings are in Warnings.
func Load(home string) (*Config, error) {
	return LoadWith(home, os.LookupEnv)
}

// LoadWith is Load with an explicit environment lookup (os.LookupEnv in
// production; tests and `config show --no-env` pass their own).
func LoadWith(home string, lookupEnv func(string) (string, bool)) (*Config, error) {
	if home == "" {
		h, err := Home()
		if err != nil {
			return nil, err
		}
		home = h
	}
	if lookupEnv == nil {
		lookupEnv = noEnv
	}
	if err := CheckHome(home); err != nil {
		return nil, err
	}
	in, err := readInput(home, lookupEnv)
	if err != nil {
		return nil, err
	}
	c, structural, invalid := build(in)
	tightenModes(c, in)
	if errs := append(structural, invalid...); len(errs) > 0 {
		return nil, errs.err()
	}
	return c, nil
}

// readInput reads both files of home (a missing one is nil).
func readInput(home string, lookupEnv func(string) (string, bool)) (input, error) {
	in := input{home: home, env: lookupEnv}
	var err error
	if in.cfg, in.cfgMode, err = readOptional(filepath.Join(home, ConfigFile)); err != nil {
		return in, err
	}
	in.sec, in.secMode, err = readOptional(filepath.Join(home, SecretsFile))
	return in, err
}

// input is what one configuration is built from.
type input struct {
	home             string
	cfg, sec         []byte // nil: file missing
	cfgMode, secMode fs.FileMode
	env              func(string) (string, bool)
	// strictHost turns off the Python-wildcard downgrade (see finalize):
	// a user who just asked for 0.0.0.0 must get the error, not a rewrite.
	strictHost bool
}

// build runs the whole pipeline. structural are problems in the files'
// shape (syntax, unknown keys, wrong types); invalid are bad values.
func build(in input) (c *Config, structural, invalid errList) {
	c = base(in.home)
	cfgPath := filepath.Join(in.home, ConfigFile)
	secPath := filepath.Join(in.home, SecretsFile)
	decodeFile(c, cfgPath, "config", false, in.cfg, &structural)
	decodeFile(c, secPath, "secrets", true, in.sec, &structural)
	for _, f := range schema().leaves {
		name := envName(f.path)
		s, ok := in.env(name)
		if !ok || s == "" {
			continue // an empty variable counts as unset, as in most shells' `VAR= cmd`
		}
		v, err := parseValue(f, s)
		if err != nil {
			structural.add(&Error{Env: name, Key: f.path, Msg: err.Error() + "; fix or unset " + name})
			continue
		}
		setField(c, f, v)
		c.Sources[f.path] = "env " + name
		c.loc[f.path] = location{env: name}
	}
	c.finalize(in.env, in.strictHost)
	if err := c.Validate(); err != nil {
		invalid = append(invalid, unjoin(err)...)
	}
	return c, structural, invalid
}

func decodeFile(c *Config, path, label string, secretsOnly bool, data []byte, errs *errList) {
	if data == nil {
		return
	}
	doc, err := parseYAML(path, data)
	if err != nil {
		errs.add(err)
		return
	}
	root, rerr := docRoot(path, doc)
	if rerr != nil {
		errs.add(rerr)
		return
	}
	if root == nil {
		return
	}
	d := &decoder{c: c, file: path, label: label, secretsOnly: secretsOnly, errs: errs}
	d.mapping(schema().root, root, 0)
}

func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// finalize derives everything that depends on more than one key.
func (c *Config) finalize(env func(string) (string, bool), strictHost bool) {
	r := schema()
	// Python names (max_injected_units, tinker_api_key, rl.evolver_*) feed
	// our keys when ours are not set; afterwards both read the same.
	for _, f := range r.leaves {
		if f.sameAs == "" {
			continue
		}
		canon := r.lookup(f.sameAs)
		av, cv := getField(c, f), getField(c, canon)
		aliasSet, canonSet := c.Sources[f.path] != "", c.Sources[canon.path] != ""
		switch {
		case aliasSet && !canonSet:
			cv.Set(av)
			c.Sources[canon.path] = c.Sources[f.path]
			c.loc[canon.path] = c.loc[f.path]
		case aliasSet && canonSet && !reflect.DeepEqual(av.Interface(), cv.Interface()):
			c.warnf(f.path, "`%s` (%s) is ignored because `%s` (%s) is also set; remove one", f.path, displayValue(f, av), canon.path, displayValue(canon, cv))
		case !aliasSet && canonSet:
			c.Sources[f.path] = c.Sources[canon.path]
			c.loc[f.path] = c.loc[canon.path]
		}
		av.Set(cv)
	}
	// Python's setup wizard always wrote proxy.host: 0.0.0.0 with no auth.
	// Accept such a file, but bind loopback instead of exposing the proxy.
	if !strictHost && c.Sources["proxy.host"] == "config" && isWildcard(c.Proxy.Host) && c.Proxy.APIKey == "" {
		c.warnf("proxy.host", "`proxy.host` %s (written by Python MetaClaw) would expose the proxy without authentication; listening on 127.0.0.1 instead. To listen on all interfaces, set `proxy.api_key` (metaclaw config set proxy.api_key <secret>)", c.Proxy.Host)
		c.Proxy.Host = "127.0.0.1"
		c.Sources["proxy.host"] = "derived"
	}
	for _, f := range r.leaves {
		if f.check != "path" {
			continue
		}
		v := getField(c, f)
		if p := v.String(); p != "" {
			p = expandTilde(p)
			if !filepath.IsAbs(p) && c.Home != "" {
				p = filepath.Join(c.Home, p) // relative to the state dir, not the daemon's cwd
			}
			v.SetString(filepath.Clean(p))
		}
	}
	c.derive()
	c.upstreamFallback(env)
	for _, f := range r.leaves {
		if f.status != "legacy" || c.Sources[f.path] == "" {
			continue
		}
		if formatValue(f, getField(c, f)) != defaultText(f) {
			c.warnf(f.path, "`%s` is accepted for compatibility and ignored: %s", f.path, f.desc)
		}
	}
}

// derive fills empty derived keys (memory.store_path, …) from their template.
func (c *Config) derive() {
	r := schema()
	for _, f := range r.leaves {
		if f.derive == "" || getField(c, f).String() != "" {
			continue
		}
		s := f.derive
		for _, g := range r.leaves {
			s = strings.ReplaceAll(s, "{"+g.path+"}", formatValue(g, getField(c, g)))
		}
		getField(c, f).SetString(filepath.FromSlash(s))
	}
}

var (
	defaultsOnce sync.Once
	defaults     *Config
)

// defaultText is the default of a key as text, for keys whose default does
// not depend on the state dir.
func defaultText(f *field) string {
	defaultsOnce.Do(func() { defaults = base("") })
	return formatValue(f, getField(defaults, f))
}

// displayValue is formatValue with secrets masked, for messages and logs.
func displayValue(f *field, v reflect.Value) string {
	if f.secret {
		return mask(v.String())
	}
	return formatValue(f, v)
}

func (c *Config) warnf(key, format string, a ...any) {
	msg := fmt.Sprintf(format, a...)
	if l := c.loc[key].String(); l != "" {
		msg = l + ": " + msg
	}
	c.Warnings = append(c.Warnings, msg)
}

// upstream env pairs, in the order they are tried.
var upstreamEnv = []struct{ api, keyVar, baseVar, defBase string }{
	{"openai", "OPENAI_API_KEY", "OPENAI_BASE_URL", "https://api.openai.com/v1"},
	{"anthropic", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "https://api.anthropic.com"},
}

// upstreamFallback lets `metaclaw start` work with just the variables the
// user's agent already has. It only fills what file and METACLAW_* left empty.
//
// A shell that ran `eval "$(metaclaw env)"` has these variables pointing at
// this proxy with the proxy key: they are skipped (with a warning), or the
// host would be its own upstream and send the proxy key to itself.
func (c *Config) upstreamFallback(env func(string) (string, bool)) {
	var own []string // variables that hold the proxy's own key or address
	get := func(k string) string {
		v, _ := env(k)
		v = strings.TrimSpace(v)
		if v == "" || v != c.Proxy.APIKey && !c.pointsAtProxy(v) {
			return v
		}
		if !slices.Contains(own, k) {
			own = append(own, k)
		}
		return ""
	}
	defer func() {
		verb := map[bool]string{true: " holds", false: " hold"}[len(own) == 1]
		if len(own) > 0 {
			c.Warnings = append(c.Warnings, strings.Join(own, ", ")+verb+" this proxy's own address or key (as `metaclaw env` sets them for clients): not used for the upstream; set the upstream with `metaclaw setup` or `metaclaw config set llm.api_base`/`llm.api_key`")
		}
	}()
	explicitAPI := c.Sources["llm.api"] != ""
	if c.LLM.APIBase == "" {
		for _, p := range upstreamEnv {
			if explicitAPI && p.api != c.LLM.API {
				continue // an explicit llm.api picks its own pair only
			}
			key, baseURL := get(p.keyVar), get(p.baseVar)
			if key == "" && baseURL == "" {
				continue
			}
			if !explicitAPI {
				c.LLM.API = p.api
				c.Sources["llm.api"] = "env " + p.keyVar
				if baseURL != "" {
					c.Sources["llm.api"] = "env " + p.baseVar
				}
			}
			if baseURL != "" {
				c.LLM.APIBase, c.Sources["llm.api_base"] = baseURL, "env "+p.baseVar
			} else {
				c.LLM.APIBase, c.Sources["llm.api_base"] = p.defBase, "env "+p.keyVar
			}
			c.loc["llm.api_base"] = location{env: strings.TrimPrefix(c.Sources["llm.api_base"], "env ")}
			break
		}
	}
	if c.LLM.APIKey == "" {
		for _, p := range upstreamEnv {
			if p.api == c.LLM.API {
				if k := get(p.keyVar); k != "" {
					c.LLM.APIKey, c.Sources["llm.api_key"] = k, "env "+p.keyVar
				}
			}
		}
	}
}

// pointsAtProxy reports whether u is this proxy's own address (a loopback
// or its listen host, with its port).
func (c *Config) pointsAtProxy(u string) bool {
	pu, err := url.Parse(u)
	if err != nil || pu.Port() != strconv.Itoa(c.Proxy.Port) {
		return false
	}
	h := pu.Hostname()
	return isLoopback(h) || strings.EqualFold(h, strings.Trim(c.Proxy.Host, "[]"))
}

func isWildcard(h string) bool {
	h = strings.Trim(h, "[]")
	return h == "" || h == "0.0.0.0" || h == "::"
}

// isLoopback reports whether host is 127.0.0.0/8, ::1 or localhost.
func isLoopback(h string) bool {
	h = strings.Trim(h, "[]")
	if strings.EqualFold(strings.TrimSuffix(h, "."), "localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// readOptional reads a file; a missing file is (nil, 0, nil).
func readOptional(path string) ([]byte, fs.FileMode, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, wrapf(err, "read config")
	}
	if data == nil {
		data = []byte{}
	}
	st, err := os.Stat(path)
	if err != nil {
		return nil, 0, wrapf(err, "stat config")
	}
	return data, st.Mode().Perm(), nil
}

// tightenModes makes files holding secrets private (0600), as ssh does for
// keys, and reports it so the user learns their key was exposed.
func tightenModes(c *Config, in input) {
	check := func(name string, data []byte, mode fs.FileMode, keys []string) {
		if data == nil || mode&0o077 == 0 || len(keys) == 0 {
			return
		}
		sort.Strings(keys)
		path := filepath.Join(in.home, name)
		if err := os.Chmod(path, 0o600); err != nil {
			c.Warnings = append(c.Warnings, fmt.Sprintf("%s holds secrets (%s) and is readable by others (mode %04o); could not fix it: %v; run chmod 600 %s", path, strings.Join(keys, ", "), mode, err, path))
			return
		}
		c.Warnings = append(c.Warnings, fmt.Sprintf("%s holds secrets (%s) and was readable by others (mode %04o); changed it to 0600", path, strings.Join(keys, ", "), mode))
	}
	check(ConfigFile, in.cfg, in.cfgMode, c.fileSecrets["config"])
	check(SecretsFile, in.sec, in.secMode, c.fileSecrets["secrets"])
}
