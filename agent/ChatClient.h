//===- ChatClient.h - An OpenAI-compatible chat endpoint ----------*- C++ -*-===//
//
// The agent talks to models through the Chat Completions protocol
// (`POST {endpoint}/chat/completions`), which hosted services and local servers (vLLM,
// llama.cpp, Ollama) all speak. One request: the messages so far; one reply: the text
// of the first choice and the tokens it cost. Failures that may pass — HTTP 429 and
// 5xx, a refused or dropped connection, a request past its timeout — are retried with
// exponential backoff; others end the call at once. The API key is sent as a bearer
// token and never appears in an error or a transcript.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace kiln::agent {

struct ChatOptions {
  std::string endpoint;          ///< e.g. https://api.openai.com/v1 (no trailing /chat/completions)
  std::string model;
  std::string apiKey;            ///< empty: no Authorization header
  double requestTimeout = 300;   ///< seconds per request
  int maxAttempts = 4;           ///< tries per call, the first included
  double backoffSeconds = 1;     ///< the first retry's delay; doubles after each
};

struct ChatMessage {
  std::string role; ///< "system", "user" or "assistant"
  std::string content;
};

struct ChatReply {
  std::string content;
  int64_t promptTokens = 0, completionTokens = 0;
  int attempts = 0; ///< requests it took
};

/// Sends `messages`; nullopt with `error` (naming the endpoint and what failed, never
/// the key) when no attempt got an answer.
std::optional<ChatReply> chat(const ChatOptions &options, const std::vector<ChatMessage> &messages,
                              std::string &error);

} // namespace kiln::agent
