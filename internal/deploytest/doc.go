// Package deploytest keeps the files under deploy/ honest (SPEC §10, issue
// 13): its tests parse each Compose file, check that every file and
// directory it mounts exists (or is made by the setup commands its header
// lists), load every gateway config it runs through configs.LoadBytes with
// the environment the container gets (the image's ENV, the service's
// environment, the example .env), exactly as `gateway config validate` and
// `gateway run` load it, and check that the proxy config in front of the
// replicas names exactly the replicas the Compose file defines, on the
// port they listen on, with the health and chat routes the API serves.
// It also reads deploy/Dockerfile's stages: the default image (the last
// stage) and the node variant for stdio MCP servers run the binary alike
// (non-root user, entrypoint, command, state volume, health check).
// Nothing here runs Docker. It has no code of its own.
package deploytest
