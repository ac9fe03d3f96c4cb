from django.urls import path

from annotation import views, views_campaigns, views_rating

# The rating page and its click endpoints take nearly all requests during a study: config.urls lists them first,
# so resolving a click does not try every other pattern before them.
rating_urlpatterns = [
    path("rate/", views_rating.rate_next, name="rate-next"),
    path("rate/<int:pk>/", views_rating.rate, name="rate"),
    path("rate/<int:pk>/label/", views_rating.rate_label, name="rate-label"),
    path("rate/<int:pk>/comment/", views_rating.rate_comment, name="rate-comment"),
    path("rate/<int:pk>/submit/", views_rating.rate_submit, name="rate-submit"),
    path("rate/<int:pk>/skip/", views_rating.rate_skip, name="rate-skip"),
    path("rate/<int:pk>/flag/", views_rating.rate_flag, name="rate-flag"),
    path("rate/<int:pk>/redact/", views_rating.rate_redact, name="rate-redact"),
    path("rate/<int:pk>/next/", views_rating.rate_goto_next, name="rate-goto-next"),
]

urlpatterns = [
    path("", views.home, name="home"),
    path("scales/", views.scale_list, name="scale-list"),
    path("scales/new/", views.scale_new, name="scale-new"),
    path("scales/ready/<slug:slug>/install/", views.scale_install, name="scale-install"),
    path("scales/<slug:slug>/", views.scale_detail, name="scale-detail"),
    path("scales/<slug:slug>/v<int:number>/", views.scale_detail, name="scale-version"),
    path("scales/<slug:slug>/v<int:number>/new-version/", views.scale_new_version, name="scale-new-version"),
    path("scales/<slug:slug>/v<int:number>/publish/", views.scale_publish, name="scale-publish"),
    path("scales/<slug:slug>/v<int:number>/dimensions/", views.scale_add_dimension, name="scale-add-dimension"),
    path("scales/<slug:slug>/v<int:number>/items/", views.scale_add_item, name="scale-add-item"),
    path("items/<int:pk>/edit/", views.item_edit, name="item-edit"),
    path("items/<int:pk>/remove/", views.item_remove, name="item-remove"),
    path("corpora/", views.corpus_list, name="corpus-list"),
    path("corpora/upload/", views_campaigns.corpus_upload, name="corpus-upload"),
    path("corpora/<int:pk>/", views.corpus_detail, name="corpus-detail"),
    path("corpora/<int:pk>/privacy/", views_campaigns.privacy_review, name="privacy-review"),
    path("dialogues/<int:pk>/", views.dialogue_detail, name="dialogue-detail"),
    path("redactions/<int:pk>/revoke/", views.redaction_revoke, name="redaction-revoke"),
    path("campaigns/", views_campaigns.campaign_list, name="campaign-list"),
    path("campaigns/new/", views_campaigns.campaign_new, name="campaign-new"),
    path("campaigns/<int:pk>/", views_campaigns.campaign_detail, name="campaign-detail"),
    path("campaigns/<int:pk>/raters/", views_campaigns.campaign_add_raters, name="campaign-add-raters"),
    path("campaigns/<int:pk>/raters/<int:user_id>/toggle/", views_campaigns.campaign_rater_toggle,
         name="campaign-rater-toggle"),
    path("campaigns/<int:pk>/assign/", views_campaigns.campaign_assign, name="campaign-assign"),
    path("campaigns/<int:pk>/sample/", views_campaigns.campaign_sample, name="campaign-sample"),
    path("campaigns/<int:pk>/allow-names/", views_campaigns.campaign_allow_names, name="campaign-allow-names"),
    path("campaigns/<int:pk>/rater-kind/", views_campaigns.campaign_rater_kind, name="campaign-rater-kind"),
    path("campaigns/<int:pk>/dialogues/<int:dialogue_id>/", views_campaigns.campaign_dialogue,
         name="campaign-dialogue"),
    path("campaigns/<int:pk>/dialogues/<int:dialogue_id>/action/", views_campaigns.campaign_dialogue_action,
         name="campaign-dialogue-action"),
    path("assignments/<int:pk>/reassign/", views_campaigns.assignment_reassign, name="assignment-reassign"),
    path("assignments/<int:pk>/history/", views_campaigns.label_history, name="label-history"),
]
