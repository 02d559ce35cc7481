package daemon

import (
	"context"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/metaclaw-go/metaclaw/host/config"
	"github.com/metaclaw-go/metaclaw/host/memory"
	"github.com/metaclaw-go/metaclaw/host/store"
)

// Store upkeep runs a while after start and then hourly.
const (
	maintenanceFirst = time.Minute
	maintenanceEvery = time.Hour
)

// PruneOptions maps store.retain_days onto a prune at now; ok is false when
// retention is off. Unmined turns are kept whenever memory is on, since
// memory ingestion (automatic or `metaclaw memory ingest`) reads them: the
// store learns how far memory has read from memory (its tables in st), not
// by reading them itself.
func PruneOptions(cfg *config.Config, now time.Time, st store.Tables) (o store.PruneOptions, ok bool) {
	if cfg.Store.RetainDays <= 0 {
		return o, false
	}
	o = store.PruneOptions{
		Before:         now.Add(-time.Duration(cfg.Store.RetainDays) * 24 * time.Hour),
		SideTurnsMined: cfg.Memory.IgnoreTurnType,
	}
	if cfg.Memory.Enabled {
		o.KeepUnmined = memory.ReadPosition(st)
	}
	return o, true
}

// upkeepStore is what the maintenance loop needs: the store's upkeep, and
// the pools memory's read position is read from.
type upkeepStore interface {
	store.Upkeep
	store.Tables
}

// maintain applies retention and returns freed pages to the file system in
// the background until the returned stop is called.
func maintain(cfg *config.Config, st upkeepStore, log zerolog.Logger) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		timer := time.NewTimer(maintenanceFirst)
		defer timer.Stop()
		hinted := false
		for {
			select {
			case <-ctx.Done():
				return
			case <-timer.C:
			}
			hinted = upkeep(ctx, cfg, st, log, hinted)
			timer.Reset(maintenanceEvery)
		}
	}()
	return func() {
		cancel()
		wg.Wait()
	}
}

// upkeep is one round: prune, then an incremental vacuum. It returns
// whether the hint about an old database has been logged.
func upkeep(ctx context.Context, cfg *config.Config, st upkeepStore, log zerolog.Logger, hinted bool) bool {
	if o, ok := PruneOptions(cfg, time.Now(), st); ok {
		rep, err := st.Prune(ctx, o)
		switch {
		case err != nil && ctx.Err() == nil:
			log.Error().Err(err).Msg("retention (store.retain_days) failed; retrying in an hour")
		case rep.Turns+rep.Jobs+rep.Sessions+rep.UsageRows > 0:
			log.Info().Int64("turns", rep.Turns).Int64("sessions", rep.Sessions).Int64("jobs", rep.Jobs).
				Int64("usage_rows_folded", rep.UsageRows).Int64("kept_unmined", rep.KeptUnmined).Msg("retention applied")
		}
	}
	freed, err := st.IncrementalVacuum(ctx, 1<<40)
	if err != nil && ctx.Err() == nil {
		log.Warn().Err(err).Msg("incremental vacuum failed")
	} else if freed > 0 {
		log.Info().Int64("pages", freed).Msg("free pages returned to the file system")
	}
	if !hinted {
		if free, incremental, err := st.FreePages(ctx); err == nil && !incremental && free > 0 {
			log.Info().Int64("free_pages", free).Msg("this database predates incremental vacuum, so deleted rows do not shrink the file; `metaclaw store prune --vacuum` rebuilds it once")
			return true
		}
	}
	return hinted
}
