// Android FirebaseMessagingService for a pushspool secure job: FCM brings data {"secureId": "<id>"};
// the service fetches the text with the signed-in user's credentials (the fetch counts as
// `received`), shows it, and the activity the notification opens reports `opened`.
// The app stores "Basic base64(user:password)" under "authorization" at sign-in, as the tutorial does.
package com.example.app

import android.app.PendingIntent
import android.content.Context
import android.content.Intent
import androidx.core.app.NotificationCompat
import androidx.core.app.NotificationManagerCompat
import com.google.firebase.messaging.FirebaseMessagingService
import com.google.firebase.messaging.RemoteMessage
import org.json.JSONObject
import java.net.HttpURLConnection
import java.net.URL

object Pushspool {
    const val SERVER = "https://push.example.com"

    fun auth(context: Context): String? =
        context.getSharedPreferences("pushspool", Context.MODE_PRIVATE).getString("authorization", null)

    /** GET or POST with the user's credentials; the body and status, or null when the network failed. */
    fun call(context: Context, path: String, body: String? = null): Pair<Int, String>? = try {
        val c = URL(SERVER + path).openConnection() as HttpURLConnection
        c.setRequestProperty("Authorization", auth(context) ?: return null)
        if (body != null) {
            c.requestMethod = "POST"
            c.doOutput = true
            c.setRequestProperty("Content-Type", "application/json")
            c.outputStream.use { it.write(body.toByteArray()) }
        }
        val text = (if (c.responseCode < 400) c.inputStream else c.errorStream).bufferedReader().use { it.readText() }
        c.responseCode to text
    } catch (e: java.io.IOException) { null }

    /** Call from a background thread: POST /api/notifications/{id}/events. */
    fun report(context: Context, id: String, type: String) {
        call(context, "/api/notifications/$id/events", JSONObject().put("type", type).toString())
    }
}

class SecurePushService : FirebaseMessagingService() {
    // Runs on a background thread: the network calls may block it.
    override fun onMessageReceived(message: RemoteMessage) {
        val id = message.data["secureId"] ?: return
        val (status, body) = Pushspool.call(this, "/api/notifications/$id") ?: return
        // {"Id": "...", "Payload": "<the text, in this device's language>", "Read": false}
        val text = if (status == 200) JSONObject(body).getString("Payload") else "Open the app to read your message"
        val open = Intent(this, MainActivity::class.java).putExtra("secureId", id)
        val notification = NotificationCompat.Builder(this, "messages")
            .setSmallIcon(R.drawable.ic_notification).setContentText(text).setAutoCancel(true)
            .setContentIntent(PendingIntent.getActivity(this, id.hashCode(), open, PendingIntent.FLAG_IMMUTABLE))
            .build()
        NotificationManagerCompat.from(this).notify(id.hashCode(), notification)   // needs POST_NOTIFICATIONS (Android 13+)
        if (status == 200) Pushspool.report(this, id, "received")   // counted by the fetch already: "duplicate"
    }
}

// In MainActivity.onCreate (and onNewIntent):
//     intent.getStringExtra("secureId")?.let { id -> Thread { Pushspool.report(this, id, "opened") }.start() }
