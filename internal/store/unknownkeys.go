package store

import (
	"sync"
	"time"
)

// unknownKeys remembers, for unknownFor, the public ids that named no key,
// so that a client repeating one (a deleted key in a forgotten cron job,
// or one key id in a flood) costs no database round trip each time.
// Public ids are random and a key never gets an id that was used before,
// so the only id a new key could have is one nobody could have presented
// yet: no valid key is ever refused by this memory. It holds at most
// unknownMax ids (about 100 bytes each); a full memory forgets everything
// it held, expired or not, rather than grow.
type unknownKeys struct {
	mu  sync.Mutex
	ids map[string]time.Time // public id -> when it was found unknown
}

const (
	unknownFor = 30 * time.Second
	unknownMax = 10_000
)

// has reports whether publicID was found unknown less than unknownFor ago.
func (u *unknownKeys) has(publicID string, now time.Time) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	at, ok := u.ids[publicID]
	return ok && now.Sub(at) < unknownFor
}

// add remembers that publicID named no key at now.
func (u *unknownKeys) add(publicID string, now time.Time) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.ids == nil {
		u.ids = make(map[string]time.Time)
	}
	if len(u.ids) >= unknownMax {
		for id, at := range u.ids {
			if now.Sub(at) >= unknownFor {
				delete(u.ids, id)
			}
		}
		if len(u.ids) >= unknownMax {
			clear(u.ids)
		}
	}
	u.ids[publicID] = now
}

// KeyInMemory reports whether the key cache holds publicID, so that
// authenticating it asks nothing of the database.
func (s *Store) KeyInMemory(publicID string) bool {
	rec, _ := s.keys.get(publicID, time.Now())
	return rec != nil
}
