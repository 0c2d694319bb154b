// The inbox page's settings for a deployment. `riverbeam dev` serves this file as it is: every value
// left out takes its default, so the page calls the API of the origin that served it.
//
// Deploying the page as static files (index.html and inbox/ copied to a bucket or any web server)? Edit
// this file there, for example:
//
//   window.RIVERBEAM_CONFIG = {
//     apiUrl: "https://abc123.execute-api.eu-west-1.amazonaws.com/",   // the HTTP API's URL
//     wsUrl: "wss://def456.execute-api.eu-west-1.amazonaws.com/prod",  // the WebSocket API's URL
//     auth: "jwt",            // the stack's AuthMode: "none" (a user id field) or "jwt" (a token)
//     // optional, with auth "jwt": where the token comes from (else a token field is shown)
//     // getToken: async () => sessionStorage.getItem("id_token"),
//     agent: "author",        // the agent a new message goes to (editable on the page)
//   };
//
// Defaults: apiUrl "<page origin>/", wsUrl "ws(s)://<page host>/ws", auth "none", agent "author".
//
// No setting holds `riverbeam dev`'s secret: the stack prints the page's URL with it in the fragment
// (http://127.0.0.1:3000/#secret=...), and the page keeps it for its tab. A deployment needs none.
window.RIVERBEAM_CONFIG = window.RIVERBEAM_CONFIG || {};
