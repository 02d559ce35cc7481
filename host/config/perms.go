package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// CheckHome refuses a state dir another local account could have planted
// things in: a $METACLAW_HOME every user can write (they could replace the
// config, the skills or the sub-plugins), or a config.yaml / secrets.yaml
// owned by another account or writable by every user. Each problem names
// the fix. A missing dir or file is fine (it is created private).
func CheckHome(home string) error {
	var errs errList
	check := func(path string, dir bool) {
		fi, err := os.Stat(path) // a symlink (dotfile managers) is judged by its target
		if errors.Is(err, fs.ErrNotExist) {
			return
		}
		if err != nil {
			errs.add(&Error{File: path, Msg: "cannot be checked: " + err.Error(), Err: err})
			return
		}
		what, fix := "file", "chmod 600 "+path
		if dir {
			what, fix = "directory", "chmod 700 "+path
		}
		if fi.Mode().Perm()&0o002 != 0 {
			errs.add(&Error{File: path, Msg: fmt.Sprintf("this %s is writable by every user on the machine (mode %04o), so another account could change what MetaClaw loads and injects into your prompts; refusing to use it. Fix: %s (and check that nothing in it was planted)", what, fi.Mode().Perm(), fix)})
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			if me := uint32(os.Geteuid()); st.Uid != me && st.Uid != 0 {
				errs.add(&Error{File: path, Msg: fmt.Sprintf("this %s belongs to uid %d, not to you (uid %d), so that account controls your configuration; refusing to use it. Fix: move it away and run `metaclaw setup` again, or have root `chown %d %s` if it really is yours", what, st.Uid, me, me, path)})
			}
		}
	}
	check(home, true)
	check(filepath.Join(home, ConfigFile), false)
	check(filepath.Join(home, SecretsFile), false)
	return errs.err()
}
