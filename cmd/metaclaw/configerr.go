package main

import (
	"fmt"
	"strings"

	"github.com/metaclaw-go/metaclaw/host/config"
)

// configFix is what to do about a configuration that does not load, as a
// last line for the error: fix the file or the environment variable the
// messages above name (only what they name), or "" when they name neither.
func configFix(err error) string {
	file, env := config.Origins(err)
	var fixes []string
	if file {
		fixes = append(fixes, "fix the file named above")
	}
	if env {
		fixes = append(fixes, "fix or unset the environment variable named above")
	}
	if len(fixes) == 0 {
		return ""
	}
	return strings.Join(fixes, "; ") + "; `metaclaw config show` shows what it can read"
}

// withConfigFix appends configFix's advice to err.
func withConfigFix(err error) error {
	if fix := configFix(err); fix != "" {
		return fmt.Errorf("%w\n(%s)", err, fix)
	}
	return err
}

// keySourceText says where the upstream key comes from, for status and
// doctor: a key only in the environment is lost by a host started elsewhere.
func keySourceText(src string) string {
	switch {
	case src == "":
		return "no API key"
	case src == "secrets":
		return "key in " + config.SecretsFile
	case src == "config":
		return "key in " + config.ConfigFile
	case strings.HasPrefix(src, "env "):
		name := strings.TrimPrefix(src, "env ")
		return "key from $" + name + " (only a host started with " + name + " set has it; `metaclaw config set llm.api_key` stores it)"
	}
	return "key from " + src
}
