package config

import "os"

// LoadPartial is Load for a configuration that may not load: it returns
// what could be read (keys with problems keep their defaults, a file that
// does not parse contributes nothing) together with Load's error, so that
// `metaclaw config show` can still show something next to the problems.
// Nothing is written (file modes are not tightened). The config is nil only
// when a file cannot be read at all.
func LoadPartial(home string) (*Config, error) {
	if home == "" {
		h, err := Home()
		if err != nil {
			return nil, err
		}
		home = h
	}
	in, err := readInput(home, os.LookupEnv)
	if err != nil {
		return nil, err
	}
	c, structural, invalid := build(in)
	return c, append(structural, invalid...).err()
}

// Origins says where the problems in err (one *Error or several joined)
// come from: a file (config.yaml or secrets.yaml, named in the message), an
// environment variable, or neither (a value set in code or on the command
// line). The CLI uses it to say what to fix.
func Origins(err error) (file, env bool) {
	var walk func(error)
	walk = func(e error) {
		if e == nil {
			return
		}
		if ce, ok := e.(*Error); ok {
			file = file || ce.File != ""
			env = env || ce.Env != ""
		}
		switch u := e.(type) {
		case interface{ Unwrap() []error }:
			for _, x := range u.Unwrap() {
				walk(x)
			}
		case interface{ Unwrap() error }:
			walk(u.Unwrap())
		}
	}
	walk(err)
	return file, env
}

// UpstreamKeySource says where the upstream key (llm.api_key) came from:
// "secrets", "config", "env NAME", or "" when there is none. A key from the
// environment exists only where that variable is set: `metaclaw status` and
// `doctor` say so.
func (c *Config) UpstreamKeySource() string {
	if c.LLM.APIKey == "" {
		return ""
	}
	return c.Source("llm.api_key")
}
