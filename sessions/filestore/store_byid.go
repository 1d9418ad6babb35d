package filestore

// slotByIDLocked returns the slot whose session id is id, through the
// byID map kept with the slots (no scan of the index).
func (s *Store) slotByIDLocked(id string) (slot, bool) {
	sl, ok := s.slots[s.byIDLocked()[id]]
	if !ok || !sl.isSession(id) {
		return slot{}, false
	}
	return sl, true
}

// byIDLocked returns the byID map, built on its first use after a load:
// a start's first reply does not look sessions up by id, and does not wait
// for it.
func (s *Store) byIDLocked() map[string]string {
	if s.byID == nil {
		s.byID = make(map[string]string, len(s.slots))
		for k, sl := range s.slots {
			s.byID[sl.id()] = k
		}
	}
	return s.byID
}
