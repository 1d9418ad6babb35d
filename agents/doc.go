// Package agents runs agent turns: it loads a session's context, calls the
// model through an llm.Provider, runs the tool loop, appends every completed
// message to the transcript, compacts long histories and spawns subagents
// (SPEC §5).
//
// A Runner is safe for concurrent use; callers (the lanes) guarantee one turn
// at a time per session key. No transcript lock is held across a model call.
// agents never imports channels or lanes.
package agents
