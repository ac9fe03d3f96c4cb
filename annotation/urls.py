from django.urls import path

from annotation import views

urlpatterns = [
    path("", views.home, name="home"),
    path("scales/", views.scale_list, name="scale-list"),
    path("scales/<slug:slug>/", views.scale_detail, name="scale-detail"),
    path("scales/<slug:slug>/v<int:number>/", views.scale_detail, name="scale-version"),
    path("scales/<slug:slug>/v<int:number>/new-version/", views.scale_new_version, name="scale-new-version"),
    path("scales/<slug:slug>/v<int:number>/publish/", views.scale_publish, name="scale-publish"),
    path("items/<int:pk>/edit/", views.item_edit, name="item-edit"),
    path("corpora/", views.corpus_list, name="corpus-list"),
    path("corpora/<int:pk>/", views.corpus_detail, name="corpus-detail"),
    path("dialogues/<int:pk>/", views.dialogue_detail, name="dialogue-detail"),
]
