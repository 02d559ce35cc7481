// Package atomicfile replaces a file's contents so that a reader, or the file
// after a crash, sees either the old contents or the new, never a mix: the
// data goes to a temp file in the same directory, is fsynced, gets its
// permission bits, and is renamed over the target; then the directory is
// fsynced so the rename itself survives a power loss.
//
// It lives under internal/ at the module root so that host/, plugin/ and
// adapters/ can all use it (host/ never imports adapters/).
package atomicfile

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Write replaces path with data and sets its permission bits to perm
// (explicit, never inherited from the umask: pass 0o600 for secrets). On any
// error the old file is left as it was and the temp file is removed. A
// symlink at path is replaced by a regular file; callers that want to write
// through a link resolve it first (see Resolve).
func Write(path string, data []byte, perm fs.FileMode) (err error) {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			_ = tmp.Close()
			_ = os.Remove(tmp.Name())
		}
	}()
	// chmod before the data goes in, so a secret is never readable by others
	// even for an instant.
	if err = tmp.Chmod(perm.Perm()); err != nil {
		return fmt.Errorf("chmod %s: %w", path, err)
	}
	if _, err = tmp.Write(data); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err = tmp.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", path, err)
	}
	if err = tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err = os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("replace %s: %w", path, err)
	}
	syncDir(dir)
	return nil
}

// Resolve returns the file a symlink at path points to (so that a write goes
// through the link and dotfile managers keep working), or path itself when it
// is not a link or the link is dangling.
func Resolve(path string) string {
	if real, err := filepath.EvalSymlinks(path); err == nil {
		return real
	}
	return path
}

// syncDir makes a rename in dir durable. Best effort: not every platform or
// file system can fsync a directory, and the data itself is already synced.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		_ = d.Close()
	}
}
