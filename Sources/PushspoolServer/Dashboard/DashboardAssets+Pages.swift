extension DashboardAssets {
    static let indexHTML = #"""
<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>pushspool dashboard</title>
<link rel="icon" href="/ui/assets/icon.svg" type="image/svg+xml">
<link rel="stylesheet" href="/ui/assets/app.css">
<script src="/ui/assets/charts.js" defer></script>
<script src="/ui/assets/app.js" defer></script>
</head>
<body>
<header class="top">
  <a class="brand" href="#/campaigns"><img src="/ui/assets/icon.svg" alt="" width="22" height="22"> pushspool</a>
  <nav aria-label="Pages">
    <a href="#/campaigns" data-page="campaigns">Campaigns</a>
    <a href="#/compose" data-page="compose">Compose</a>
    <a href="#/devices" data-page="devices">Devices</a>
    <a href="#/system" data-page="system">System</a>
  </nav>
  <span class="who"><span id="who"></span> <button id="logout" type="button" class="quiet">Log out</button></span>
</header>
<main id="main" tabindex="-1"><p class="muted">Loading…</p></main>
<footer class="bottom"><span id="live" aria-live="polite"></span></footer>
</body>
</html>
"""#

    static let loginHTML = #"""
<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Log in · pushspool</title>
<link rel="icon" href="/ui/assets/icon.svg" type="image/svg+xml">
<link rel="stylesheet" href="/ui/assets/app.css">
</head>
<body class="login">
<main>
<form class="card login-form" method="post" action="/ui/login">
  <h1><img src="/ui/assets/icon.svg" alt="" width="28" height="28"> pushspool</h1>
  <p class="muted">Operators' dashboard</p>
  <!--message-->
  <label for="user">User</label>
  <input id="user" name="user" autocomplete="username" required autofocus>
  <label for="password">Password</label>
  <input id="password" name="password" type="password" autocomplete="current-password" required>
  <button type="submit">Log in</button>
</form>
</main>
</body>
</html>
"""#

    static let icon = #"""
<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><rect width="32" height="32" rx="7" fill="#1f5fbf"/><path d="M9 22V10h8a5 5 0 0 1 0 10h-4" fill="none" stroke="#fff" stroke-width="3" stroke-linecap="round" stroke-linejoin="round"/><circle cx="23" cy="23" r="3" fill="#ffd24a"/></svg>
"""#
}
