package config

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"

	"github.com/gofrs/flock"
)

// ProxyKeyPrefix starts every generated proxy key, so one is easy to tell
// from an upstream key in a config file.
const ProxyKeyPrefix = "mck-"

// ProxyAuthRequired reports whether clients must present proxy.api_key
// (proxy.auth key, the default).
func (c *Config) ProxyAuthRequired() bool { return c.Proxy.Auth != "none" }

// EnsureProxyKey gives the proxy a key when proxy.auth is key and none is
// configured: a new random key is written to $home/secrets.yaml (0600) and
// set on c. Every path that needs the key (start, wire, setup, env) calls
// this one function, so they all agree on it. created reports a new key.
// Concurrent callers (say `start` and `wire` at once) serialise on a lock
// file and re-read the secrets, so only one key is ever generated.
func EnsureProxyKey(c *Config) (created bool, err error) {
	if !c.ProxyAuthRequired() || c.Proxy.APIKey != "" {
		return false, nil
	}
	run := filepath.Join(c.Home, "run")
	if err := os.MkdirAll(run, 0o700); err != nil {
		return false, wrapf(err, "create %s", run)
	}
	lock := flock.New(filepath.Join(run, "proxy_key.lock"))
	if err := lock.Lock(); err != nil {
		return false, wrapf(err, "lock %s", lock.Path())
	}
	defer lock.Unlock()
	// Another process may have written one while we waited.
	if now, err := LoadWith(c.Home, noEnv); err == nil && now.Proxy.APIKey != "" {
		c.Proxy.APIKey = now.Proxy.APIKey
		c.Sources["proxy.api_key"] = now.Sources["proxy.api_key"]
		return false, nil
	}
	key, err := NewProxyKey()
	if err != nil {
		return false, err
	}
	if err := Set(c.Home, "proxy.api_key", key); err != nil {
		return false, fmt.Errorf("store the generated proxy key: %w", err)
	}
	c.Proxy.APIKey = key
	c.Sources["proxy.api_key"] = "secrets"
	return true, nil
}

// NewProxyKey returns a fresh random proxy key (256 bits).
func NewProxyKey() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("generate a proxy key: %w", err)
	}
	return ProxyKeyPrefix + base64.RawURLEncoding.EncodeToString(b), nil
}
