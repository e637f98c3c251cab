// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// OpenAI's error object, which every /v1/* route of the generation server
// answers with (other routes keep {"error": "text"}):
//   {"error": {"message": "...", "type": "...", "param": "field" | null,
//              "code": STATUS}}
// type by status: 401 authentication_error, 403 permission_error, 404
// not_found_error, 429 rate_limit_error, 503 service_unavailable, 504
// timeout, other 5xx server_error, any other invalid_request_error. code
// is the HTTP status as a number, as vLLM sends it.
// Thread-safety: free functions without shared state.

#include <string>
#include <string_view>

#include "http/http_server.h"

namespace batchscope {

std::string openai_error_body(int status, std::string_view message, std::string_view param);
HttpResponse openai_error_response(int status, const std::string& message,
                                   const std::string& param);
// The ErrorMaker of the /v1/* routes.
HttpResponse openai_error_response(int status, const std::string& message);

}  // namespace batchscope
