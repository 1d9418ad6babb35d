package main

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/gateway/gateway/channels/telegram"
	"github.com/gateway/gateway/channels/telegram/telegramtest"
)

// sendTraffic injects the run's messages (all at once for burst, at the
// rate for sustained) and returns how many and when each became
// available to the bot. With -replicas the fake Bot API does not queue
// them for getUpdates: a webhookPoster (returned, to be closed) posts them
// to the replicas' webhooks round robin (replicaFor).
func sendTraffic(ctx context.Context, o options, res *results, tg *telegramtest.Server, daemons []*daemon) (int, []time.Time, *webhookPoster, error) {
	total := o.n
	if o.mode == "sustained" {
		total = int(float64(o.rate) * o.duration.Seconds())
	}
	var poster *webhookPoster
	if o.replicas > 0 {
		addrs := make([]string, len(daemons))
		for i, d := range daemons {
			addrs[i] = d.httpAddr
		}
		poster = newWebhookPoster(ctx, addrs, telegram.DefaultConfig().Webhook.Path, total)
	}
	var avail []time.Time // when message i became available to the bot
	inject := func(i int) error {
		res.sent(i)
		chat := int64(10000 + i%o.chats)
		id := tg.DM(chat, "m"+strconv.Itoa(i))
		avail = append(avail, time.Now())
		if poster == nil {
			return nil
		}
		raw, ok := tg.Update(id)
		if !ok {
			return fmt.Errorf("update %d of message %d is not in the fake", id, i)
		}
		poster.Post(ctx, chat, replicaFor(i, o.chats, len(daemons), o.byChat), raw)
		return nil
	}
	switch o.mode {
	case "burst":
		for i := 0; i < total; i++ {
			if err := inject(i); err != nil {
				return i, avail, poster, err
			}
		}
	case "sustained":
		interval := time.Second / time.Duration(o.rate)
		next := time.Now()
		for i := 0; i < total; i++ {
			if d := time.Until(next); d > 0 {
				time.Sleep(d)
			}
			next = next.Add(interval)
			if err := inject(i); err != nil {
				return i, avail, poster, err
			}
			if ctx.Err() != nil {
				return i + 1, avail, poster, ctx.Err()
			}
		}
	}
	return total, avail, poster, nil
}
