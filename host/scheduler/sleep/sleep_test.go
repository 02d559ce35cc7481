package sleep

import (
	"testing"
	"time"
	_ "time/tzdata" // the test must not depend on the machine's zoneinfo
)

func berlin(t *testing.T) *time.Location {
	t.Helper()
	loc, err := LoadZone("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

func TestSleepHours(t *testing.T) {
	loc := berlin(t)
	at := func(s string) time.Time {
		tm, err := time.ParseInLocation("2006-01-02 15:04", s, loc)
		if err != nil {
			t.Fatal(err)
		}
		return tm
	}
	utc := func(s string) time.Time {
		tm, err := time.Parse("2006-01-02 15:04", s)
		if err != nil {
			t.Fatal(err)
		}
		return tm
	}
	cases := []struct {
		name, start, end string
		now              time.Time
		open             bool
		until            time.Time // when open
		nextStart        time.Time // first upcoming
		nextLen          time.Duration
	}{
		{"before the night", "23:00", "07:00", at("2026-01-10 22:59"), false, time.Time{}, utc("2026-01-10 22:00"), 8 * time.Hour},
		{"at the start", "23:00", "07:00", at("2026-01-10 23:00"), true, utc("2026-01-11 06:00"), utc("2026-01-11 22:00"), 8 * time.Hour},
		{"after midnight", "23:00", "07:00", at("2026-01-11 00:30"), true, utc("2026-01-11 06:00"), utc("2026-01-11 22:00"), 8 * time.Hour},
		{"at the end", "23:00", "07:00", at("2026-01-11 07:00"), false, time.Time{}, utc("2026-01-11 22:00"), 8 * time.Hour},
		// 29 March 2026: 02:00 CET jumps to 03:00 CEST, the night is 7 hours.
		{"spring-forward night", "23:00", "07:00", at("2026-03-28 22:00"), false, time.Time{}, utc("2026-03-28 22:00"), 7 * time.Hour},
		{"inside the spring-forward night", "23:00", "07:00", utc("2026-03-29 01:30"), true, utc("2026-03-29 05:00"), utc("2026-03-29 21:00"), 8 * time.Hour},
		// 25 October 2026: 03:00 CEST falls back to 02:00 CET, the night is 9 hours.
		{"fall-back night", "23:00", "07:00", at("2026-10-24 12:00"), false, time.Time{}, utc("2026-10-24 21:00"), 9 * time.Hour},
		{"inside the fall-back night", "23:00", "07:00", utc("2026-10-25 01:30"), true, utc("2026-10-25 06:00"), utc("2026-10-25 22:00"), 8 * time.Hour},
		// A start the clocks skip begins when they jump past it (03:00 CEST).
		{"start in the skipped hour", "02:30", "06:00", at("2026-03-28 12:00"), false, time.Time{}, utc("2026-03-29 01:00"), 3 * time.Hour},
		// A start the clocks repeat begins at its first occurrence (CEST).
		{"start in the repeated hour", "02:30", "06:00", at("2026-10-24 12:00"), false, time.Time{}, utc("2026-10-25 00:30"), 4*time.Hour + 30*time.Minute},
		{"daytime window", "13:00", "14:30", at("2026-01-10 13:59"), true, utc("2026-01-10 13:30"), utc("2026-01-11 12:00"), 90 * time.Minute},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, err := New(tc.start, tc.end, loc)
			if err != nil {
				t.Fatal(err)
			}
			v := s.Check(tc.now)
			if v.Open != tc.open {
				t.Fatalf("open = %v (%s), want %v", v.Open, v.Reason, tc.open)
			}
			if tc.open && !v.Until.Equal(tc.until) {
				t.Fatalf("until %s, want %s", v.Until.UTC(), tc.until)
			}
			if len(v.Upcoming) == 0 {
				t.Fatalf("no upcoming window")
			}
			if n := v.Upcoming[0]; !n.Start.Equal(tc.nextStart) || n.Len() != tc.nextLen {
				t.Fatalf("next %s for %s, want %s for %s", n.Start.UTC(), n.Len(), tc.nextStart, tc.nextLen)
			}
		})
	}
}

func TestDisabledAndBadInput(t *testing.T) {
	s, err := New("07:00", "07:00", time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	if v := s.Check(time.Now()); v.Open || len(v.Upcoming) != 0 {
		t.Fatalf("equal start and end must never open: %+v", v)
	}
	for _, bad := range []string{"7", "24:00", "12:5", "ab:cd", "-1:00"} {
		if _, err := New(bad, "07:00", time.UTC); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if _, err := LoadZone("Mars/Olympus"); err == nil {
		t.Error("unknown zone accepted")
	}
	if loc, err := LoadZone(""); err != nil || loc != time.Local {
		t.Errorf("empty zone: %v %v", loc, err)
	}
}
