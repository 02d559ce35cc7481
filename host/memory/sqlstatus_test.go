package memory

import (
	"sync"

	"modernc.org/sqlite"
)

// Every SQLite connection this test binary opens, so a benchmark can count
// the pages its operation looked up (in the page cache or read from the
// file) on all of them: the writer's and the read pool's alike.
var (
	sqlConnsMu sync.Mutex
	sqlConns   []sqlite.DBStatus
)

func init() {
	sqlite.RegisterConnectionHook(func(c sqlite.ExecQuerierContext, _ string) error {
		if st, ok := c.(sqlite.DBStatus); ok {
			sqlConnsMu.Lock()
			sqlConns = append(sqlConns, st)
			sqlConnsMu.Unlock()
		}
		return nil
	})
}

// pagesLookedUp is the pages every connection has asked its page cache for
// (hits and misses): SQLite's work, whatever the statements were.
func pagesLookedUp() int64 {
	sqlConnsMu.Lock()
	defer sqlConnsMu.Unlock()
	var n int64
	for _, c := range sqlConns {
		for _, op := range []sqlite.DBStatusOp{sqlite.DBStatusCacheHit, sqlite.DBStatusCacheMiss} {
			if cur, _, err := c.Status(op, false); err == nil {
				n += int64(cur)
			}
		}
	}
	return n
}
