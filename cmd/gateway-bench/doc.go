// Command gateway-bench is the load generator for the whole daemon. It starts
// the project's fakes on loopback, a Bot API (channels/telegram/telegramtest)
// and an OpenAI-compatible model (agents/openai/openaitest, instant replies
// unless -think), runs the gateway binary against them with a fresh
// state directory, injects messages and reports throughput, latency
// percentiles (message available to the bot → reply received), start-to-ready
// time, peak RSS and lost or duplicated replies.
//
//	go build -o /tmp/gateway ./cmd/gateway
//	go run ./cmd/gateway-bench -gateway /tmp/gateway -mode burst -n 1000 -chats 100
//	go run ./cmd/gateway-bench -gateway /tmp/gateway -mode sustained -rate 200 -chats 100 -duration 20s
//
// -streaming sets the Telegram account's streaming.mode; -think makes every
// model call take that long, and -tools N makes the fake model call the
// built-in sessions_list N times per turn before it answers (benchReply),
// so that a progress status is edited between model calls; status posts,
// edits and deletes are counted apart from replies.
//
// With -postgres the daemon runs on a fresh database of that server. With
// -replicas N (issue 13) N daemons share it as replicas, each with its own
// replica id, state directory and HTTP listener, Telegram in webhook mode:
// the bench posts the updates to their webhooks round robin as Telegram
// behind a load balancer would (webhook.go). On postgres it prints the
// database round trips and commits per message that the daemons count
// themselves (gateway_storage_roundtrips_total and
// gateway_storage_commits_total, by operation: storagestats.go);
// -roundtrips also counts the round trips with a proxy on the wire
// (roundtrips.go). -mode takeover SIGKILLs a replica in the middle of a
// turn and times how long another takes to run it (takeover.go); -mode
// restart SIGKILLs the one polling daemon under traffic and starts it
// again on the same state, -runs times, and times how long until it polls
// Telegram again (restart.go; -replicas 1: under the same replica id).
//
// -floor runs, in place of the gateway, the floor it is compared with
// (issue 21): a bot that keeps nothing (floorbot.go), the bench binary
// re-executed as a child so that its CPU and RSS are read the same way.
// It long-polls the same fake Bot API with telegram-bot-api, runs at most
// -max-concurrent turns at once, one per chat at a time (followup), asks
// the same fake model with go-openai about the message alone and replies
// to it; no disk, no history. Its report has the daemon's lines.
//
//	go run ./cmd/gateway-bench -floor -mode burst -n 1000 -chats 100
//
// -floor -floor-context runs the context floor (floorcontext.go): the
// floor bot asking the model what the gateway asks — the system messages,
// tools and request options captured from two turns of -gateway on the
// same fakes, each chat's history kept in memory. Still nothing on disk;
// against it the gateway's ratio is what keeping costs, not what the fake
// model spends decoding a longer request on the same cores.
//
//	go run ./cmd/gateway-bench -gateway /tmp/gateway -floor -floor-context -mode burst -n 1000 -chats 100
//
// -mode compare measures issue 21's two ratios (files against the floor,
// postgres against files), and files against the context floor, in -runs
// rounds of bursts run one right after the other, and prints each round's ratios and their medians
// (compare.go): a single pair of runs minutes apart on a shared machine
// measures the drift of its load as much as the daemon. State directories
// go under $TMPDIR (TMPDIR=/dev/shm takes the disk out of a files run).
//
// All traffic stays on 127.0.0.1 (and the database's socket); every loop is
// bounded in count and time.
package main
