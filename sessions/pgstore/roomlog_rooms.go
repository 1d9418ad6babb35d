package pgstore

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/gateway/gateway/sessions"
)

var _ sessions.RoomLister = (*RoomLog)(nil)

// Rooms lists the rooms with kept entries, sorted as bytes.
func (h *RoomLog) Rooms(ctx context.Context) ([]string, error) {
	ctx = withOp(ctx, OpRooms)
	rows, err := h.db.pool.Query(ctx, `SELECT DISTINCT room FROM room_history WHERE gone_seq IS NULL ORDER BY room`)
	if err != nil {
		return nil, fmt.Errorf("pgstore: rooms: %w", err)
	}
	rooms, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (string, error) {
		var b []byte
		err := r.Scan(&b)
		return string(b), err
	})
	if err != nil {
		return nil, fmt.Errorf("pgstore: rooms: %w", err)
	}
	return rooms, nil
}
