package memory

import (
	"context"
	"fmt"

	"github.com/metaclaw-go/metaclaw/host/safety"
)

// Recheck runs the injection guard over the memories already stored, once
// per version of its rules (safety.MemoryRulesVersion). A memory learned
// before the guard existed, or before a rule that now catches it, would
// otherwise stay a standing order in every prompt. Each one the rules now
// refuse is recorded in memory_refused (origin "recheck", so it is listed
// for review with its text) and forgotten. It returns how many it removed.
func (s *Store) Recheck(ctx context.Context) (int, error) {
	have, err := meta(ctx, s.r, "guard_rules")
	if err != nil {
		return 0, fmt.Errorf("memory: recheck: %w", err)
	}
	if have == safety.MemoryRulesVersion {
		return 0, nil
	}
	units, err := s.List(ctx, Filter{Status: "all", Limit: -1})
	if err != nil {
		return 0, fmt.Errorf("memory: recheck: %w", err)
	}
	removed := 0
	for i := range units {
		u := units[i]
		fs := safety.CheckMemory(u.Content)
		if len(fs) == 0 {
			continue
		}
		u.Origin = "recheck"
		if err := s.recordRefusal(ctx, &u, fs); err != nil {
			return removed, err
		}
		if err := s.Forget(ctx, u.ID, "refused by the injection guard on recheck ("+fs[0].Rule+")"); err != nil {
			return removed, fmt.Errorf("memory: recheck: %w", err)
		}
		removed++
		s.o.Log.Warn().Str("scope", u.Scope).Str("rule", fs[0].Rule).Msg("memory: a stored memory is refused by the injection guard's current rules; removed (see `metaclaw memory refused`)")
	}
	if err := setMeta(ctx, s.w, "guard_rules", safety.MemoryRulesVersion); err != nil {
		return removed, fmt.Errorf("memory: recheck: %w", err)
	}
	return removed, nil
}
