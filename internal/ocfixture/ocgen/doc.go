// Command ocgen generates the OpenClaw fixture under ../testdata: it runs
// the real OpenClaw (node and the openclaw npm package, installed by
// scripts/openclaw-fixture outside the repository) against local fakes — the
// repository's fake Telegram Bot API (channels/telegram/telegramtest) and
// fake OpenAI-compatible model (agents/openai/openaitest) — drives a scripted
// scenario through the fake Telegram, stops OpenClaw and records what
// OpenClaw's own CLI reports about the state it left.
//
// The pieces: BotAPI adapts the fake Bot API to grammY, OpenClaw's Telegram
// client, which posts JSON bodies (tgjson.go); Model scripts the fake model's
// answers from markers in the user's text (model.go); Scenario is the list
// of messages and checks (scenario.go); Run ties them to an OpenClaw process
// (run.go) and fixture.go copies the result. Nothing here runs in CI: CI
// reads only the committed fixture.
//
// It is a main package, like cmd/gateway-bench, because it uses the fakes
// (telegramtest, openaitest): nothing can import it, so they never reach
// the daemon (internal/archtest). Run it through scripts/openclaw-fixture,
// which installs node and OpenClaw first.
package main
