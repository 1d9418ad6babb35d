package filestore

// slotByIDLocked returns the slot whose session id is id, through the
// byID map kept with the slots (no scan of the index).
func (s *Store) slotByIDLocked(id string) (*slot, bool) {
	sl, ok := s.slots[s.byID[id]]
	if !ok || sl.e.SessionID != id {
		return nil, false
	}
	return sl, true
}
