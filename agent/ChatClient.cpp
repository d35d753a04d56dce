//===- ChatClient.cpp - An OpenAI-compatible chat endpoint over libcurl ------===//
#include "agent/ChatClient.h"

#include <chrono>
#include <mutex>
#include <thread>

#include <curl/curl.h>
#include <nlohmann/json.hpp>

namespace kiln::agent {

namespace {

size_t append(char *data, size_t size, size_t count, void *user) {
  auto *out = static_cast<std::string *>(user);
  constexpr size_t kMaxReply = size_t(64) << 20;
  if (out->size() + size * count > kMaxReply)
    return 0; // aborts the transfer: no endpoint needs to send this much
  out->append(data, size * count);
  return size * count;
}

struct Attempt {
  bool retry = false; ///< a failure that may pass
  long status = 0;
  std::string body, error;
};

Attempt post(const ChatOptions &o, const std::string &url, const std::string &payload) {
  Attempt a;
  CURL *curl = curl_easy_init();
  if (!curl) {
    a.error = "cannot start an HTTP client";
    return a;
  }
  struct curl_slist *headers = curl_slist_append(nullptr, "Content-Type: application/json");
  std::string auth;
  if (!o.apiKey.empty()) {
    auth = "Authorization: Bearer " + o.apiKey;
    headers = curl_slist_append(headers, auth.c_str());
  }
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(curl, CURLOPT_POSTFIELDS, payload.c_str());
  curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE, static_cast<long>(payload.size()));
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, append);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &a.body);
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, static_cast<long>(o.requestTimeout * 1000));
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(std::min(o.requestTimeout, 30.0) * 1000));
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  const CURLcode rc = curl_easy_perform(curl);
  if (rc != CURLE_OK) {
    a.error = curl_easy_strerror(rc);
    a.retry = rc == CURLE_COULDNT_CONNECT || rc == CURLE_OPERATION_TIMEDOUT || rc == CURLE_GOT_NOTHING ||
              rc == CURLE_RECV_ERROR || rc == CURLE_SEND_ERROR || rc == CURLE_PARTIAL_FILE ||
              rc == CURLE_COULDNT_RESOLVE_HOST;
  } else {
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &a.status);
    a.retry = a.status == 429 || a.status >= 500;
    if (a.status != 200)
      a.error = "HTTP " + std::to_string(a.status);
  }
  curl_slist_free_all(headers);
  curl_easy_cleanup(curl);
  return a;
}

} // namespace

std::optional<ChatReply> chat(const ChatOptions &o, const std::vector<ChatMessage> &messages, std::string &error) {
  static std::once_flag init;
  std::call_once(init, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
  nlohmann::json body = {{"model", o.model}, {"messages", nlohmann::json::array()}};
  for (const ChatMessage &m : messages)
    body["messages"].push_back({{"role", m.role}, {"content", m.content}});
  const std::string payload = body.dump();
  std::string url = o.endpoint;
  while (!url.empty() && url.back() == '/')
    url.pop_back();
  url += "/chat/completions";

  double delay = o.backoffSeconds;
  std::string last;
  for (int attempt = 1; attempt <= std::max(o.maxAttempts, 1); ++attempt) {
    Attempt a = post(o, url, payload);
    if (a.error.empty()) {
      nlohmann::json reply = nlohmann::json::parse(a.body, nullptr, false);
      if (reply.is_discarded() || !reply.contains("choices") || !reply["choices"].is_array() ||
          reply["choices"].empty() || !reply["choices"][0].contains("message")) {
        error = url + " answered with something that is not a chat completion";
        return std::nullopt;
      }
      ChatReply r;
      r.content = reply["choices"][0]["message"].value("content", std::string());
      if (reply.contains("usage") && reply["usage"].is_object()) {
        r.promptTokens = reply["usage"].value("prompt_tokens", int64_t{0});
        r.completionTokens = reply["usage"].value("completion_tokens", int64_t{0});
      }
      r.attempts = attempt;
      return r;
    }
    last = a.error;
    if (!a.body.empty() && a.status >= 400) {
      nlohmann::json e = nlohmann::json::parse(a.body, nullptr, false);
      if (!e.is_discarded() && e.contains("error") && e["error"].is_object() && e["error"].contains("message"))
        last += ": " + e["error"]["message"].get<std::string>();
    }
    if (!a.retry)
      break;
    if (attempt < o.maxAttempts) {
      std::this_thread::sleep_for(std::chrono::duration<double>(delay));
      delay *= 2;
    }
  }
  error = url + ": " + last;
  return std::nullopt;
}

} // namespace kiln::agent
