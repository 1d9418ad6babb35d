// Package agents runs agent turns: it loads a session's context, calls the
// model through an llm.Provider, runs the tool loop, appends every completed
// message to the transcript, compacts long histories and spawns subagents
// (SPEC §5).
//
// A Runner is safe for concurrent use; callers (the lanes) guarantee one turn
// at a time per session key. No transcript lock is held across a model call:
// the sessions store locks only for appends. agents never imports channels or
// lanes; work for other sessions (subagent runs, announcements) goes through
// Options.Dispatch.
//
// Choices where the SPEC is silent:
//
//   - Model: Entry.ModelOverride, else Agent.Model, else defaults.model, as
//     "provider/model". Turn time limit: defaults.timeoutSeconds.
//   - Fallbacks (fallback.go): after that model come the agent's
//     model.fallbacks (the defaults' when the agent lists none). A call
//     moves to the next model when its provider failed through its own fault
//     (llm.ProviderFault: no answer, 5xx, 429, 401/402/403/404/408) after
//     its own retries, never for a context overflow or another 4xx, nor once
//     text was streamed. The rest of the turn stays on the model that
//     answered; Result.Model and the transcript name it. A Breaker per
//     provider skips one that failed 3 calls in a row for 60 s, then lets
//     one trial through; when every breaker is open the first model is
//     called anyway.
//   - Token counts: provider usage when reported, else chars/4 × 1.2 (bytes).
//     Usage input is the uncached prompt tokens (cache reads and writes are
//     counted apart, as pi and Anthropic do; OpenAI's cached tokens are taken
//     out of prompt_tokens).
//   - Cost: each assistant message's usage.cost (pi's block) is tokens × the
//     price of providers.<name>.models.<model>.price per million, computed
//     when the message is stamped; a model without a price costs 0. The same
//     step adds to gateway_tokens_total{agent,model,kind} and
//     gateway_cost_usd_total{agent,model} (model is "provider/model"): a map
//     lookup, a few multiplications and the counters (BenchmarkAccount).
//     Compaction triggers on the estimated size of the whole context (system
//     prompt included) exceeding window − reserveTokens, checked before every
//     model call of a turn; the reserve takes at most half of the window
//     (compactAt: a 20k window with the default 20000 reserve would
//     otherwise compact before every call).
//   - History pruning (maxHistoryShare) only shapes what is sent: whole turns
//     (from a user message on) are left out oldest first, the compaction
//     summary and the last turn are always sent, the transcript is untouched.
//   - Compaction keeps the last user message and what follows plus what the
//     keep rule asks for of earlier messages (keep.go: keepRecentTokens,
//     keepRecentTurns, keepRecentMessages, each a minimum, the longest tail
//     wins), cut never between a tool call and its result; the previous summary is folded into the new one. A failed or
//     timed-out summary (compaction.timeoutSeconds, default 120) becomes a
//     plain note, so the session still shrinks and the turn goes on. A
//     summary larger than a fifth of the window is cut to it (boundSummary).
//   - Tool results of the turn under way that outgrow window − reserve are
//     sent cut, largest first, with the cut noted; the transcript keeps
//     them whole (toolfit.go).
//   - A resumed turn (no new inputs) whose reply is already in the transcript
//     returns that reply without calling the model.
//   - Tools: sessions_list and sessions_history see only the calling session
//     and the subagent sessions it spawned; chats never see each other.
//     sessions_spawn is not offered to subagents and refuses them if called.
//     agents.list[].tools.allow turns on opt-in built-in tools (web_fetch,
//     package webfetch; web_search, package websearch, which also needs
//     Options.WebSearch); tools.deny takes any built-in tool away and wins.
//     A denied or not-allowed tool is neither offered nor run ("unknown tool").
//     The message tool (opt-in) acts through Turn.Room, which the
//     dispatcher binds to the turn's chat: agents never reach a channel,
//     and a turn without a chat (the API, subagents) has no Room. Its ask
//     action posts choice buttons; the press comes back later as a new
//     message of the chat, never within the asking turn.
//     sessions_search (opt-in) asks the backend's Searcher within
//     tools.sessionsSearch.scope: session (this chat), agent (default) or
//     all; it never returns another agent's sessions unless the scope is all.
//   - MCP tools (package mcp, mcp.servers) are opt-in per agent: tools.allow
//     names "mcp:*", "mcp:<server>" or "<server>__<tool>" (deny takes the
//     same forms and wins). Their results are stored as the server sent
//     them (text, pi image blocks); a failed, timed-out or interrupted call
//     is a tool error result, never a failed turn.
//   - Subagents: runId is the uuid of the child key; the child entry records
//     spawnedBy (the parent key) and label durably, so a child replayed after
//     a restart still announces (at least once). Its cleanup and
//     runTimeoutSeconds are stored with it too, and the start of its run
//     (runStartedAt, recorded before the run): after a restart a child with
//     cleanup delete is still deleted once it has reported, and its run
//     times out when it would have, counted from its first start (a run
//     resumed past its limit times out at once). A child stopped by /stop
//     or shutdown announces nothing and keeps its run's start.
package agents
