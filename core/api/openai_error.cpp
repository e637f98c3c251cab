// SPDX-License-Identifier: GPL-3.0-or-later
#include "api/openai_error.h"

#include "common/text_out.h"

namespace batchscope {

namespace {

const char* error_type(int status) {
  switch (status) {
    case 401: return "authentication_error";
    case 403: return "permission_error";
    case 404: return "not_found_error";
    case 429: return "rate_limit_error";
    case 503: return "service_unavailable";
    case 504: return "timeout";
    default: return status >= 500 ? "server_error" : "invalid_request_error";
  }
}

}  // namespace

std::string openai_error_body(int status, std::string_view message, std::string_view param) {
  std::string out = "{\"error\":{\"message\":";
  append_json_string(out, message);
  out += ",\"type\":";
  append_json_string(out, error_type(status));
  out += ",\"param\":";
  if (param.empty())
    out += "null";
  else
    append_json_string(out, param);
  out += ",\"code\":";
  append_int(out, status);
  return out + "}}";
}

HttpResponse openai_error_response(int status, const std::string& message,
                                   const std::string& param) {
  HttpResponse r = error_response(status, message);
  r.body = openai_error_body(status, message, param);
  return r;
}

HttpResponse openai_error_response(int status, const std::string& message) {
  return openai_error_response(status, message, "");
}

}  // namespace batchscope
