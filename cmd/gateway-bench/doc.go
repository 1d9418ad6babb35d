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
// All traffic stays on 127.0.0.1; every loop is bounded in count and time.
package main
