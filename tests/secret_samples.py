"""Made-up secrets in the real formats the redactor knows (none was ever a live credential),
one or more examples per format, and ordinary text that must be left alone: shared by the
redaction tests."""

from __future__ import annotations

import json

from subagents.redaction import REDACTED

# Made-up values in the real formats (none of them was ever a live credential).
GITHUB_CLASSIC = "ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
GITHUB_FINE = (
    "github_pat_11ABCDEFG0123456789abc_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789AbCdEfGhIjKlMnOpQrStUvW"
)
AWS_KEY_ID = "AKIAIOSFODNN7EXAMPLE"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
SLACK_BOT = "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx"
SLACK_APP = "xapp-1-A0123456789-1234567890123-abcdef0123456789abcdef0123456789"
SLACK_HOOK_PATH = "T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX"
PEM_BODY = (
    "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun\n"
    "VTLw7onLRnrq0/IzW7yWR7QkrmBL7jTKEn5u+qKhbwKfBstIs+bMY2Zkp18gnTxK\n"
    "Lxoj3PD8qYLDM1rL1yLc0a8A2z9mBvW1X3xP+pQ==\n"
)
PEM_BLOCK = f"-----BEGIN RSA PRIVATE KEY-----\n{PEM_BODY}-----END RSA PRIVATE KEY-----"
GOOGLE_KEY = "AIzaSyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q"
STRIPE_LIVE = "sk_live_51H8x9AbCdEfGhIjKlMnOpQrSt"
GITLAB = "glpat-AbCdEfGhIj0123456789"
NPM = "npm_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
HUGGING_FACE = "hf_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Qr"
JWT = (
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4ifQ."
    "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
)
OPENAI_KEY = "sk-proj-A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6"
ANTHROPIC_KEY = "sk-ant-api03-A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6-AA"
BEARER = "abcDEF0123456789.xyz_-A1"

# format name -> (text, the secret it holds, the text redacted)
EXAMPLES: dict[str, list[tuple[str, str, str]]] = {
    "github-token": [
        (f"push with {GITHUB_CLASSIC} now", GITHUB_CLASSIC, "push with ghp_[REDACTED] now"),
        *[
            (f"{prefix}_{GITHUB_CLASSIC[4:]}", GITHUB_CLASSIC[4:], f"{prefix}_[REDACTED]")
            for prefix in ("gho", "ghu", "ghs", "ghr")
        ],
    ],
    "github-fine-grained-token": [
        (f"GH={GITHUB_FINE}", GITHUB_FINE, "GH=github_pat_[REDACTED]"),
    ],
    "aws-access-key-id": [
        (f"id {AWS_KEY_ID}.", AWS_KEY_ID, "id AKIA[REDACTED]."),
        ("ASIAY34FZKBOKMUTVV7A,", "ASIAY34FZKBOKMUTVV7A", "ASIA[REDACTED],"),
    ],
    "aws-secret-access-key": [
        (f"aws_secret_access_key = {AWS_SECRET}", AWS_SECRET, "aws_secret_access_key = [REDACTED]"),
        (f"AWS_SECRET_ACCESS_KEY={AWS_SECRET}\n", AWS_SECRET, "AWS_SECRET_ACCESS_KEY=[REDACTED]\n"),
    ],
    "slack-token": [
        (f"token {SLACK_BOT}", SLACK_BOT, "token xoxb-[REDACTED]"),
        *[
            (f"{kind}-{SLACK_BOT[5:]}", SLACK_BOT[5:], f"{kind}-[REDACTED]")
            for kind in ("xoxp", "xoxa", "xoxr", "xoxs")
        ],
    ],
    "slack-app-token": [(SLACK_APP, SLACK_APP, "xapp-[REDACTED]")],
    "slack-webhook": [
        (
            f"POST https://hooks.slack.com/services/{SLACK_HOOK_PATH} ok",
            SLACK_HOOK_PATH,
            "POST https://hooks.slack.com/services/[REDACTED] ok",
        )
    ],
    "private-key": [
        (f"key:\n{PEM_BLOCK}\nafter", PEM_BODY.splitlines()[1], "key:\n[REDACTED]\nafter"),
        (
            "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmU=\n"
            "-----END OPENSSH PRIVATE KEY-----",
            "b3BlbnNzaC1rZXktdjEAAAAABG5vbmU=",
            REDACTED,
        ),
        (  # an encrypted key with headers
            "-----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\n"
            "DEK-Info: AES-128-CBC,3F17F5316E2BAC89\n\n"
            f"{PEM_BODY}-----END RSA PRIVATE KEY-----",
            PEM_BODY.splitlines()[2],
            REDACTED,
        ),
        (  # inside a JSON string, as in a service account file
            json.dumps({"private_key": f"-----BEGIN PRIVATE KEY-----\n{PEM_BODY}"}),
            PEM_BODY.splitlines()[0],
            '{"private_key": "[REDACTED]"}',
        ),
        (  # cut off before its end: what came is redacted
            f"-----BEGIN EC PRIVATE KEY-----\n{PEM_BODY}",
            PEM_BODY.splitlines()[1],
            REDACTED,
        ),
    ],
    "url-password": [
        (
            "postgres://admin:hunter2@db.internal:5432/app",
            "hunter2",
            "postgres://admin:[REDACTED]@db.internal:5432/app",
        ),
        (
            "clone https://bot:s3cr3t!x@git.example.com/r.git",
            "s3cr3t!x",
            "clone https://bot:[REDACTED]@git.example.com/r.git",
        ),
    ],
    "google-api-key": [(f"key={GOOGLE_KEY}&q=1", GOOGLE_KEY, "key=AIza[REDACTED]&q=1")],
    "stripe-live-key": [
        (STRIPE_LIVE, STRIPE_LIVE, "sk_live_[REDACTED]"),
        (
            "rk_live_51H8x9AbCdEfGhIjKlMnOpQrSt",
            "rk_live_51H8x9AbCdEfGhIjKlMnOpQrSt",
            "rk_live_[REDACTED]",
        ),
    ],
    "gitlab-token": [(f"{GITLAB} ", GITLAB, "glpat-[REDACTED] ")],
    "npm-token": [
        (
            f"//registry.npmjs.org/:_authToken={NPM}",
            NPM,
            "//registry.npmjs.org/:_authToken=[REDACTED]",
        )
    ],
    "huggingface-token": [(f"HF {HUGGING_FACE}", HUGGING_FACE, "HF hf_[REDACTED]")],
    "jwt": [(f"jwt {JWT} end", JWT, "jwt eyJ[REDACTED] end")],
    "openai-anthropic-key": [
        (f"key {OPENAI_KEY}", OPENAI_KEY, "key sk-[REDACTED]"),
        (f"'{ANTHROPIC_KEY}'", ANTHROPIC_KEY, "'sk-[REDACTED]'"),
    ],
    "authorization-header": [
        (f"Authorization: Bearer {BEARER}", BEARER, "Authorization: Bearer [REDACTED]"),
        (
            '{"authorization": "Basic dXNlcjpwYXNzd29yZA=="}',
            "dXNlcjpwYXNzd29yZA==",
            '{"authorization": "Basic [REDACTED]"}',
        ),
        ("x-api-key: k3y-0123456789abcdef", "k3y-0123456789abcdef", "x-api-key: [REDACTED]"),
        (
            f"curl -H 'Authorization: token {GITHUB_CLASSIC}'",
            GITHUB_CLASSIC,
            "curl -H 'Authorization: token [REDACTED]'",
        ),
    ],
    "secret-assignment": [
        ("password=hunter2!", "hunter2!", "password=[REDACTED]"),
        (
            '{"password": "correct horse battery"}',
            "correct horse battery",
            '{"password": "[REDACTED]"}',
        ),
        ("secret: s3cr3t-value\n", "s3cr3t-value", "secret: [REDACTED]\n"),
        ("?token=abc123def&x=1", "abc123def", "?token=[REDACTED]&x=1"),
        ("DB_PASSWORD  =  'pa55word'", "pa55word", "DB_PASSWORD  =  '[REDACTED]'"),
        ('client_secret = "9f8e7d6c"', "9f8e7d6c", 'client_secret = "[REDACTED]"'),
        ("--api-key=A1B2C3D4", "A1B2C3D4", "--api-key=[REDACTED]"),
        ("GITHUB_TOKEN: 'whatever it is'", "whatever it is", "GITHUB_TOKEN: '[REDACTED]'"),
    ],
}

# Ordinary text and code: nothing in it may change.
ORDINARY = [
    "request 3f2a9c1e-7b2d-4e6f-9a8b-0c1d2e3f4a5b finished",  # a UUID
    "commit 9fceb02d0ae598e95dc970b74767f19372d61af8 (HEAD -> main)",  # a git sha
    "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA",
    "password_hash = hash(pw)",
    "token = get_token(request)\nif token is None:\n    raise PermissionError(token)\n",
    "self.token = token\nheaders = {'Authorization': f'Bearer {token}'}",
    "def login(password: str) -> bool:\n    return check(password=password)",
    "max_tokens = 4096\ntoken_count: int = 12\n",
    '{"token": null, "password": true, "secret": 123}',
    "if password == other or token != expected:",
    "The tokenizer splits text into tokens; the secret is patience.",
    "task-0123456789abcdef0123 and disk-usage-monitoring-service",
    "https://user@example.com/path and http://localhost:8080/x?y=1",
    "ask-0123456789abcdefghij, mask-ABCDEFGHIJKLMNOPQRST",
    "version: 3.11.7\nname: subagents\ndescription: Claude-Code-style subagents",
    "A1B2C3 KIA AKIAFOO ASIA-pacific",
    "export PATH=/usr/local/bin:$PATH",
    "token=$GITHUB_TOKEN gh api user",
]

FORMAT_SECRETS = [
    GITHUB_CLASSIC,
    GITHUB_FINE,
    AWS_KEY_ID,
    SLACK_BOT,
    SLACK_APP,
    PEM_BLOCK,
    GOOGLE_KEY,
    STRIPE_LIVE,
    GITLAB,
    NPM,
    HUGGING_FACE,
    JWT,
    OPENAI_KEY,
    ANTHROPIC_KEY,
    f"https://hooks.slack.com/services/{SLACK_HOOK_PATH}",
]
