package telegram

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"
	"go.uber.org/zap"

	"github.com/gateway/gateway/channels"
)

// offsetSaveEvery bounds how often the polled offset is persisted.
const offsetSaveEvery = time.Second

// runPolling is the long-poll loop. The offset sent to Telegram (which
// confirms every earlier update) and the persisted offset only move past an
// update once the Handler accepted or rejected it.
func (a *Adapter) runPolling(ctx context.Context, h channels.Handler) error {
	// A webhook left from webhook mode makes getUpdates fail with 409.
	if _, err := a.call(ctx, "deleteWebhook", tgbotapi.Params{"drop_pending_updates": "false"}); err != nil && ctx.Err() == nil {
		a.log.Warn("telegram deleteWebhook failed", zap.Error(err))
	}
	offset, err := a.opts.OffsetStore.Load(ctx, a.account)
	if err != nil {
		// Starting from Telegram's own confirmed offset never skips anything.
		a.log.Error("loading telegram offset failed, starting from Telegram's", zap.Error(err))
		offset = 0
	}
	saved, savedAt := offset, time.Time{}
	save := func(ctx context.Context) {
		if offset == saved {
			return
		}
		if err := a.opts.OffsetStore.Save(ctx, a.account, offset); err != nil {
			a.log.Error("saving telegram offset failed", zap.Error(err))
			return
		}
		saved, savedAt = offset, time.Now()
	}
	// The saved offset only spares redeliveries at the next start (the
	// journal drops those as duplicates anyway): it is written at most
	// every offsetSaveEvery, and when polling stops.
	defer save(context.WithoutCancel(ctx))
	bo := a.newBackoff()
	for ctx.Err() == nil {
		batch, err := a.getUpdates(ctx, offset)
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			a.conn.Failed(err)
			wait := bo.next()
			var ae *APIError
			switch {
			case errors.As(err, &ae) && ae.RetryAfter > 0:
				wait = ae.RetryAfter
				a.log.Warn("telegram getUpdates rate limited", zap.Duration("retry_in", wait))
			case errors.As(err, &ae) && ae.Conflict():
				a.log.Warn("telegram getUpdates conflict: another poller or a webhook is active",
					zap.Error(err), zap.Duration("retry_in", wait))
			default:
				a.log.Warn("telegram getUpdates failed", zap.Error(err), zap.Duration("retry_in", wait))
			}
			sleep(ctx, wait)
			continue
		}
		a.conn.Connected()
		next, herr := a.processBatch(ctx, h, batch, offset)
		offset = next
		if time.Since(savedAt) >= offsetSaveEvery {
			save(ctx)
		}
		if herr != nil {
			if ctx.Err() != nil {
				break
			}
			wait := bo.next()
			a.log.Warn("handler did not accept telegram update; retrying it", zap.Error(herr),
				zap.Int("update_id", offset), zap.Duration("retry_in", wait))
			sleep(ctx, wait)
			continue
		}
		bo.reset()
	}
	return nil
}

// getUpdates long-polls for updates from offset on.
func (a *Adapter) getUpdates(ctx context.Context, offset int) ([]json.RawMessage, error) {
	params := tgbotapi.Params{
		"timeout":         strconv.Itoa(a.cfg.PollTimeoutSeconds),
		"limit":           "100",
		"allowed_updates": allowedUpdates,
	}
	if offset > 0 {
		params["offset"] = strconv.Itoa(offset)
	}
	timeout := time.Duration(a.cfg.PollTimeoutSeconds)*time.Second + requestTimeout
	resp, err := a.callTimeout(ctx, "getUpdates", params, timeout)
	if err != nil {
		return nil, err
	}
	var batch []json.RawMessage
	if err := json.Unmarshal(resp.Result, &batch); err != nil {
		return nil, &APIError{Method: "getUpdates", Code: http.StatusBadGateway, Description: "undecodable result: " + err.Error()}
	}
	return batch, nil
}

// processBatch hands each update of batch to h, in order, and returns
// the new offset: one past the last update acknowledged. It stops at the
// first update h failed on (returning h's error): that update and the
// rest of the batch are fetched again. Handlers may defer their durability
// wait to the end of the batch (channels.Batch): the offset moves on only
// once it is done.
//
// Telegram answers an offset it knows with updates from that offset on,
// and one it does not know (past the end of its queue: ids of the bot the
// token named before, of another Bot API server, or ids Telegram chose
// afresh after a week without updates) from the head of its queue, below
// the offset. Those updates are new: they are handled and the offset
// follows Telegram's ids (skipping them would poll the same head again
// and again and never see a message).
func (a *Adapter) processBatch(ctx context.Context, h channels.Handler, batch []json.RawMessage, offset int) (next int, err error) {
	ctx, acks := channels.WithBatch(ctx)
	defer func(start int) {
		if werr := acks.Wait(); werr != nil {
			next, err = start, werr
		}
	}(offset)
	a.markAlbums(batch)
	for _, raw := range batch {
		var u update
		if err := json.Unmarshal(raw, &u); err != nil {
			var id struct {
				UpdateID int `json:"update_id"`
			}
			if json.Unmarshal(raw, &id) != nil || id.UpdateID == 0 {
				a.log.Error("undecodable telegram update without id; stopping batch", zap.Error(err))
				return offset, nil
			}
			a.log.Error("undecodable telegram update acknowledged", zap.Int("update_id", id.UpdateID), zap.Error(err))
			offset = id.UpdateID + 1
			continue
		}
		if u.UpdateID < offset {
			a.log.Warn("telegram update id below the offset: Telegram did not know the offset, following its ids",
				zap.Int("offset", offset), zap.Int("update_id", u.UpdateID))
		}
		if err := a.handleUpdate(ctx, h, &u); err != nil {
			return offset, err
		}
		offset = u.UpdateID + 1
	}
	return offset, nil
}

// handleUpdate normalises u and calls h. It returns nil when u may be
// acknowledged: dropped here, accepted, or rejected on purpose.
func (a *Adapter) handleUpdate(ctx context.Context, h channels.Handler, u *update) error {
	if u.CallbackQuery != nil {
		return a.press(ctx, h, u.CallbackQuery)
	}
	in, reason := a.normalise(u)
	if reason != "" {
		if reason == dropNotConfigured {
			return errors.New("telegram: not connected")
		}
		if reason == dropNoMention && u.Message != nil {
			a.albums.hold(in, u.Message.MediaGroupID) // a later file may address its album
		}
		a.log.Debug("telegram update dropped", zap.Int("update_id", u.UpdateID), zap.String("reason", reason))
		return nil
	}
	if u.Message != nil {
		// Files of its album seen (and held) before it addressed the
		// album: durable before going on (their updates are acknowledged
		// already, so a failed batch wait would not bring them back).
		held := a.albums.release(in, u.Message.MediaGroupID)
		for i, f := range held {
			if err := h(channels.WithoutBatch(ctx), f); err != nil && !errors.Is(err, channels.ErrRejected) {
				a.albums.putBack(in, u.Message.MediaGroupID, held[i:])
				return err
			}
		}
	}
	err := h(ctx, in)
	if err == nil || errors.Is(err, channels.ErrRejected) {
		return nil
	}
	return err
}
